#include "linux/hooks.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>

#include "common/child_process.hpp"
#include "common/error.hpp"
#include "common/log.hpp"
#include "common/retry_eintr.hpp"
#include "common/unique_fd.hpp"

namespace crx::linux_ {
namespace {

UniqueFd state_memfd(const std::string& state_json) {
  UniqueFd fd(::memfd_create("crx-hook-state", MFD_CLOEXEC | MFD_ALLOW_SEALING));
  if (!fd) throw_errno("hook: memfd_create");
  size_t done = 0;
  while (done < state_json.size()) {
    ssize_t n = retry_eintr(
        [&] { return ::write(fd.get(), state_json.data() + done, state_json.size() - done); });
    if (n < 0) throw_errno("hook: write state");
    done += static_cast<size_t>(n);
  }
  ::fcntl(fd.get(), F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL);
  if (::lseek(fd.get(), 0, SEEK_SET) < 0) throw_errno("hook: lseek state");
  return fd;
}

int64_t now_ms() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1000 + ts.tv_nsec / 1000000;
}

std::string first_line(const std::string& text) {
  std::string line = text.substr(0, text.find('\n'));
  while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
  return line;
}

// Reads what is available into out (bounded); returns false at EOF/error.
bool drain(int fd, std::string& out) {
  char buf[4096];
  for (;;) {
    ssize_t n = retry_eintr([&] { return ::read(fd, buf, sizeof buf); });
    if (n > 0) {
      if (out.size() < 65536) out.append(buf, static_cast<size_t>(n));
      continue;
    }
    return n < 0 && errno == EAGAIN;
  }
}

}  // namespace

void run_hook(const spec::Hook& hook, const std::string& state_json, const std::string& phase) {
  const std::string who = "hook " + phase + " " + hook.path;
  UniqueFd stdin_fd = state_memfd(state_json);
  int err_pipe[2];
  if (::pipe2(err_pipe, O_CLOEXEC) < 0) throw_errno(who + ": pipe");
  UniqueFd err_r(err_pipe[0]), err_w(err_pipe[1]);
  // Only our end does not block: the hook writes its stderr as usual.
  if (::fcntl(err_r.get(), F_SETFL, O_NONBLOCK) < 0) throw_errno(who + ": fcntl");
  UniqueFd devnull(::open("/dev/null", O_WRONLY | O_CLOEXEC));

  std::vector<std::string> args = hook.args.empty() ? std::vector<std::string>{hook.path}
                                                     : hook.args;
  SpawnOptions so;
  so.path = hook.path;
  // Like runc (Go's exec with a nil Env): a hook without env inherits crx's.
  if (!hook.env.empty()) so.env = &hook.env;
  so.stdin_fd = stdin_fd.get();
  so.stdout_fd = devnull.get();
  so.stderr_fd = err_w.get();
  so.unblock_signals = true;
  so.exec_error = who + ": execve";
  ChildProcess child = spawn(args, so);
  err_w.reset();
  stdin_fd.reset();

  UniqueFd pidfd(static_cast<int>(::syscall(SYS_pidfd_open, child.pid(), 0)));
  const int64_t deadline = hook.timeout && *hook.timeout > 0
                               ? now_ms() + int64_t{*hook.timeout} * 1000 : -1;
  std::string err_text;
  bool err_open = true, timed_out = false;
  for (;;) {
    pollfd fds[2] = {{pidfd.get(), POLLIN, 0}, {err_open ? err_r.get() : -1, POLLIN, 0}};
    int wait_ms = -1;
    if (deadline >= 0) {
      const int64_t left = deadline - now_ms();
      if (left <= 0) {
        timed_out = true;
        break;
      }
      wait_ms = static_cast<int>(left);
    }
    if (!pidfd) wait_ms = wait_ms < 0 ? 50 : std::min(wait_ms, 50);  // no pidfd: poll waitpid
    // EINTR: round the loop again, with the time left to the deadline.
    int rc = ::poll(fds, 2, wait_ms);
    if (rc < 0 && errno != EINTR) throw_errno(who + ": poll");
    if (err_open && fds[1].revents) err_open = drain(err_r.get(), err_text);
    if (pidfd) {
      if (fds[0].revents) break;
    } else {
      siginfo_t si{};
      if (::waitid(P_PID, child.pid(), &si, WEXITED | WNOHANG | WNOWAIT) == 0 &&
          si.si_pid == child.pid())
        break;
    }
  }
  int status = 0;
  if (timed_out) {
    child.kill_and_wait();
  } else {
    status = child.wait();
  }
  drain(err_r.get(), err_text);  // what the hook wrote before exiting

  if (timed_out)
    throw Error(who + " timed out after " + std::to_string(*hook.timeout) + "s");
  if (WIFSIGNALED(status)) {
    const char* abbrev = sigabbrev_np(WTERMSIG(status));
    throw Error(who + " killed by signal " +
                (abbrev ? "SIG" + std::string(abbrev) : std::to_string(WTERMSIG(status))));
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) != 0) {
    std::string msg = who + " exited with status " + std::to_string(WEXITSTATUS(status));
    if (const std::string line = first_line(err_text); !line.empty()) msg += ": " + line;
    throw Error(msg);
  }
}

void run_hooks(const std::vector<spec::Hook>& hooks, const std::string& state_json,
               const std::string& phase) {
  for (const auto& hook : hooks) {
    if (phase == "poststop") {
      try {
        run_hook(hook, state_json, phase);
      } catch (const Error& e) {
        log::warn(e.what());
      }
      continue;
    }
    run_hook(hook, state_json, phase);
  }
}

}  // namespace crx::linux_
