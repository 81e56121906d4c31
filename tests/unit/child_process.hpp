// Runs a test body in a forked child, for tests that change process-wide
// state (seccomp filters, capabilities, uids, rlimits) that must not leak
// into the test runner. The child reports through a pipe at fd >= 100, so
// a body may rearrange fds 3..99.
#pragma once
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <exception>
#include <functional>
#include <string>

namespace crx::test {

// The child's result: what body returned, "error: <what()>" when it threw,
// or "signal N" / "exit N" when it died without reporting.
inline std::string in_child(const std::function<std::string()>& body) {
  int fds[2];
  if (::pipe(fds) < 0) return "pipe failed";
  const pid_t pid = ::fork();
  if (pid < 0) return "fork failed";
  if (pid == 0) {
    ::close(fds[0]);
    // Out of the way of tests that rearrange low fds (3..99).
    const int high = ::fcntl(fds[1], F_DUPFD_CLOEXEC, 100);
    if (high >= 0) {
      ::close(fds[1]);
      fds[1] = high;
    }
    std::string out;
    try {
      out = body();
    } catch (const std::exception& e) {
      out = std::string("error: ") + e.what();
    }
    const char* p = out.data();
    size_t left = out.size();
    while (left > 0) {
      ssize_t n = ::write(fds[1], p, left);
      if (n <= 0) break;
      p += n;
      left -= static_cast<size_t>(n);
    }
    ::_exit(0);
  }
  ::close(fds[1]);
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(fds[0], buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  ::close(fds[0]);
  int status = 0;
  ::waitpid(pid, &status, 0);
  if (WIFSIGNALED(status)) return out + "signal " + std::to_string(WTERMSIG(status));
  if (WIFEXITED(status) && WEXITSTATUS(status) != 0)
    return out + "exit " + std::to_string(WEXITSTATUS(status));
  return out;
}

}  // namespace crx::test
