#include "common/child_process.hpp"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "common/error.hpp"
#include "common/retry_eintr.hpp"
#include "common/unique_fd.hpp"

namespace crx {

ChildProcess::ChildProcess(ChildProcess&& o) noexcept : pid_(std::exchange(o.pid_, -1)) {}

ChildProcess& ChildProcess::operator=(ChildProcess&& o) noexcept {
  if (this != &o) {
    kill_and_wait();
    pid_ = std::exchange(o.pid_, -1);
  }
  return *this;
}

ChildProcess::~ChildProcess() { kill_and_wait(); }

int ChildProcess::wait() {
  if (pid_ <= 0) throw Error("wait for a child that was already reaped");
  int status = 0;
  if (retry_eintr([&] { return ::waitpid(pid_, &status, 0); }) < 0) {
    throw_errno("waitpid " + std::to_string(pid_));
  }
  pid_ = -1;
  return status;
}

bool ChildProcess::try_wait(int* status) {
  if (pid_ <= 0) return true;
  pid_t r = ::waitpid(pid_, status, WNOHANG);
  if (r < 0) throw_errno("waitpid " + std::to_string(pid_));
  if (r == 0) return false;
  pid_ = -1;
  return true;
}

bool ChildProcess::wait_for(std::chrono::milliseconds timeout, int* status) {
  if (try_wait(status)) return true;
  UniqueFd pidfd(static_cast<int>(::syscall(SYS_pidfd_open, pid_, 0)));
  if (!pidfd) {
    // A kernel before 5.3 has no pidfd_open: waitpid in 10 ms steps.
    if (errno != ENOSYS) throw_errno("pidfd_open " + std::to_string(pid_));
    const auto until = std::chrono::steady_clock::now() + timeout;
    while (!try_wait(status)) {
      if (std::chrono::steady_clock::now() >= until) return false;
      ::usleep(10000);
    }
    return true;
  }
  struct pollfd p{pidfd.get(), POLLIN, 0};
  int r = retry_eintr([&] { return ::poll(&p, 1, static_cast<int>(timeout.count())); });
  if (r < 0) throw_errno("waiting for process " + std::to_string(pid_));
  return try_wait(status);
}

void ChildProcess::kill_and_wait() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGKILL);
  int status;
  retry_eintr([&] { return ::waitpid(pid_, &status, 0); });
  pid_ = -1;
}

pid_t ChildProcess::release() { return std::exchange(pid_, -1); }

namespace {

std::vector<char*> c_strings(const std::vector<std::string>& v) {
  std::vector<char*> out;
  for (const auto& s : v) out.push_back(const_cast<char*>(s.c_str()));
  out.push_back(nullptr);
  return out;
}

// What the child writes into the error pipe when it gives up before exec.
enum class ChildStep : int { JoinNamespace, Exec };
struct ChildFailure {
  ChildStep step;
  int error;
};

// In the forked child: only async-signal-safe calls on prepared data.
[[noreturn]] void exec_child(const SpawnOptions& o, pid_t parent, const char* file, char** argv,
                             char** envp, int err_fd) {
  if (o.die_with_parent) {
    ::prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (::getppid() != parent) ::_exit(127);  // we died before the prctl
  }
  for (int fd : o.keep_fds) {
    if (fd >= 0) ::fcntl(fd, F_SETFD, 0);
  }
  if (o.quiet) {
    int null = ::open("/dev/null", O_RDWR);
    if (null >= 0) {
      ::dup2(null, 0);
      ::dup2(null, 1);
      ::dup2(null, 2);
      if (null > 2) ::close(null);
    }
  }
  if (o.stdin_fd >= 0) ::dup2(o.stdin_fd, 0);
  if (o.stdout_fd >= 0) ::dup2(o.stdout_fd, 1);
  if (o.stderr_fd >= 0) ::dup2(o.stderr_fd, 2);
  if (o.unblock_signals) {
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
  }
  ::signal(SIGPIPE, SIG_DFL);
  for (int fd : o.namespace_fds) {
    if (::setns(fd, 0) != 0) {
      const ChildFailure f{ChildStep::JoinNamespace, errno};
      (void)!::write(err_fd, &f, sizeof f);
      ::_exit(127);
    }
  }
  if (!o.path.empty()) {
    if (envp) {
      ::execve(file, argv, envp);
    } else {
      ::execv(file, argv);
    }
  } else if (envp) {
    ::execvpe(file, argv, envp);
  } else {
    ::execvp(file, argv);
  }
  const ChildFailure f{ChildStep::Exec, errno};
  (void)!::write(err_fd, &f, sizeof f);
  ::_exit(127);
}

}  // namespace

ChildProcess spawn(const std::vector<std::string>& argv, const SpawnOptions& o) {
  if (argv.empty()) throw Error("spawn: empty command line");
  const std::string& file = o.path.empty() ? argv[0] : o.path;
  // Everything the child needs is prepared before fork: no allocation after.
  std::vector<char*> args = c_strings(argv);
  std::vector<char*> envp;
  if (o.env) envp = c_strings(*o.env);
  int err_pipe[2];  // carries the errno of a failed exec; closes on exec
  if (::pipe2(err_pipe, O_CLOEXEC) != 0) throw_errno("pipe for " + file);
  UniqueFd err_r(err_pipe[0]), err_w(err_pipe[1]);

  const pid_t parent = ::getpid();
  const pid_t pid = ::fork();
  if (pid < 0) throw_errno("fork for " + file);
  if (pid == 0) {
    exec_child(o, parent, file.c_str(), args.data(), o.env ? envp.data() : nullptr, err_w.get());
  }
  ChildProcess child(pid);
  err_w.reset();
  ChildFailure failure{};
  ssize_t n = retry_eintr([&] { return ::read(err_r.get(), &failure, sizeof failure); });
  if (n == sizeof failure) {
    child.wait();
    if (failure.step == ChildStep::JoinNamespace)
      throw_errno("joining a namespace for " + file, failure.error);
    throw_errno(o.exec_error.empty() ? "exec " + file : o.exec_error, failure.error);
  }
  return child;
}

std::string describe_wait_status(int status) {
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) {
    return std::string("killed by signal ") + std::to_string(WTERMSIG(status)) + " (" +
           ::strsignal(WTERMSIG(status)) + ")";
  }
  return "changed state " + std::to_string(status);
}

}  // namespace crx
