#include "foreground.hpp"

#include <poll.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <memory>
#include <vector>

#include "common/error.hpp"
#include "common/retry_eintr.hpp"
#include "linux/console.hpp"

namespace crx::cmd {

BlockedSignals::BlockedSignals() {
  sigset_t all;
  sigfillset(&all);
  sigdelset(&all, SIGSEGV);
  sigdelset(&all, SIGBUS);
  sigdelset(&all, SIGFPE);
  sigdelset(&all, SIGILL);
  sigprocmask(SIG_BLOCK, &all, &old_);
  fd_ = UniqueFd(::signalfd(-1, &all, SFD_CLOEXEC | SFD_NONBLOCK));
  if (!fd_) throw_errno("signalfd");
}

BlockedSignals::~BlockedSignals() { sigprocmask(SIG_SETMASK, &old_, nullptr); }

int exit_status(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 255;
}

std::optional<int> reap(pid_t pid) {
  std::optional<int> result;
  for (;;) {
    int status;
    pid_t p = ::waitpid(-1, &status, WNOHANG);
    if (p <= 0) break;
    if (p == pid) result = exit_status(status);
  }
  return result;
}

namespace {

// After the process exited: copies everything still in the pty (it can hold
// tens of KiB, many reads' worth) to stdout. poll() flushes the tty's
// pending input first, so a zero timeout loses nothing the process wrote;
// it stops at EOF/EIO, or when nothing is pending because another process
// still holds the terminal open.
void drain_pty(int master) {
  char buf[16384];
  for (;;) {
    pollfd p{master, POLLIN, 0};
    if (::poll(&p, 1, 0) <= 0 || !(p.revents & (POLLIN | POLLHUP | POLLERR))) return;
    ssize_t n = ::read(master, buf, sizeof buf);
    if (n <= 0) return;
    for (ssize_t done = 0; done < n;) {
      ssize_t w =
          retry_eintr([&] { return ::write(1, buf + done, static_cast<size_t>(n - done)); });
      if (w <= 0) return;
      done += w;
    }
  }
}

}  // namespace

int wait_foreground(const BlockedSignals& signals, pid_t pid, int pty_master) {
  std::unique_ptr<linux_::PtyProxy> proxy;
  if (pty_master >= 0) proxy = std::make_unique<linux_::PtyProxy>(pty_master, 0, 1);
  // the child may have exited before the signalfd was read
  std::optional<int> status = reap(pid);
  while (!status) {
    std::vector<pollfd> fds{{signals.fd(), POLLIN, 0}};
    if (proxy)
      for (int fd : proxy->poll_fds()) fds.push_back({fd, POLLIN, 0});
    if (::poll(fds.data(), fds.size(), -1) < 0 && errno != EINTR) throw_errno("poll");
    if (proxy && fds.size() > 1) {
      bool ready = false;
      for (size_t i = 1; i < fds.size(); ++i) ready = ready || fds[i].revents;
      if (ready && !proxy->pump()) proxy.reset();
    }
    signalfd_siginfo si;
    while (::read(signals.fd(), &si, sizeof si) == sizeof si) {
      int sig = static_cast<int>(si.ssi_signo);
      if (sig == SIGCHLD) {
        status = reap(pid);
      } else if (sig == SIGWINCH) {
        if (proxy) proxy->resize();
      } else {
        ::kill(pid, sig);
      }
    }
  }
  if (pty_master >= 0) drain_pty(pty_master);
  return *status;
}

}  // namespace crx::cmd
