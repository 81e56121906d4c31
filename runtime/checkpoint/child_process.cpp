#include "checkpoint/child_process.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "common/error.hpp"
#include "common/retry_eintr.hpp"

namespace crx::checkpoint {

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

void ChildProcess::kill_and_wait() {
  if (pid_ <= 0) return;
  ::kill(pid_, SIGKILL);
  int status;
  retry_eintr([&] { return ::waitpid(pid_, &status, 0); });
  pid_ = -1;
}

ChildProcess spawn(const std::vector<std::string>& argv, const std::vector<int>& keep_fds,
                   bool quiet, int stdin_fd, int stdout_fd, int stderr_fd,
                   const std::vector<std::string>* env, bool die_with_parent) {
  if (argv.empty()) throw Error("spawn: empty command line");
  // Everything the child needs is prepared before fork: no allocation after.
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  std::vector<char*> envp;
  if (env) {
    for (const auto& e : *env) envp.push_back(const_cast<char*>(e.c_str()));
    envp.push_back(nullptr);
  }
  int err_pipe[2];
  if (::pipe2(err_pipe, O_CLOEXEC) != 0) throw_errno("pipe for " + argv[0]);

  pid_t parent = ::getpid();
  pid_t pid = ::fork();
  if (pid < 0) {
    int e = errno;
    ::close(err_pipe[0]);
    ::close(err_pipe[1]);
    throw_errno("fork for " + argv[0], e);
  }
  if (pid == 0) {
    if (die_with_parent) {
      ::prctl(PR_SET_PDEATHSIG, SIGKILL);
      if (::getppid() != parent) ::_exit(127);  // we died before the prctl
    }
    for (int fd : keep_fds) {
      if (fd >= 0) ::fcntl(fd, F_SETFD, 0);
    }
    if (quiet) {
      int null = ::open("/dev/null", O_RDWR);
      if (null >= 0) {
        ::dup2(null, 0);
        ::dup2(null, 1);
        ::dup2(null, 2);
        if (null > 2) ::close(null);
      }
    }
    if (stdin_fd >= 0) ::dup2(stdin_fd, 0);
    if (stdout_fd >= 0) ::dup2(stdout_fd, 1);
    if (stderr_fd >= 0) ::dup2(stderr_fd, 2);
    ::signal(SIGPIPE, SIG_DFL);
    if (env) {
      ::execvpe(args[0], args.data(), envp.data());
    } else {
      ::execvp(args[0], args.data());
    }
    int e = errno;
    (void)!::write(err_pipe[1], &e, sizeof e);
    ::_exit(127);
  }
  ::close(err_pipe[1]);
  int child_errno = 0;
  ssize_t n = retry_eintr([&] { return ::read(err_pipe[0], &child_errno, sizeof child_errno); });
  ::close(err_pipe[0]);
  ChildProcess child(pid);
  if (n == sizeof child_errno) {
    child.wait();
    throw_errno("exec " + argv[0], child_errno);
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

}  // namespace crx::checkpoint
