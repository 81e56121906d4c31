// crx run: create + start; in the foreground crx waits for the container,
// forwards signals to it, proxies its terminal, exits with its status and
// deletes it.
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <memory>
#include <optional>

#include "cli.hpp"
#include "common/error.hpp"
#include "common/log.hpp"
#include "container/lifecycle.hpp"
#include "linux/console.hpp"

namespace crx::cmd {

void add_create_flags(CLI::App* sub, container::CreateOptions& o);

namespace {

struct RunArgs {
  container::CreateOptions create;
  bool detach = false;
  bool keep = false;
  bool no_subreaper = false;
};

// Blocks every catchable signal; they are read from a signalfd instead.
class BlockedSignals {
 public:
  BlockedSignals() {
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
  ~BlockedSignals() { sigprocmask(SIG_SETMASK, &old_, nullptr); }
  int fd() const { return fd_.get(); }

 private:
  sigset_t old_;
  UniqueFd fd_;
};

int exit_status(int status) {
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 255;
}

// Reaps children; returns the init's exit status once it has exited.
std::optional<int> reap(pid_t init) {
  std::optional<int> result;
  for (;;) {
    int status;
    pid_t p = ::waitpid(-1, &status, WNOHANG);
    if (p <= 0) break;
    if (p == init) result = exit_status(status);
  }
  return result;
}

int run_foreground(Cli& cli, RunArgs& a) {
  if (!a.no_subreaper) ::prctl(PR_SET_CHILD_SUBREAPER, 1);
  BlockedSignals signals;
  UniqueFd console_ours, console_theirs;
  if (a.create.console_socket.empty()) {
    int sv[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) throw_errno("socketpair");
    console_ours.reset(sv[0]);
    console_theirs.reset(sv[1]);
    a.create.own_console_fd = console_theirs.get();
  }
  auto created = container::create_container(cli.global, a.create);
  console_theirs.reset();
  auto cleanup = [&] {
    if (a.keep) return;
    try {
      container::delete_container(cli.global, a.create.id, true);
    } catch (const std::exception& e) {
      log::warn(e.what());
    }
  };
  try {
    container::start_container(cli.global, a.create.id);
  } catch (...) {
    cleanup();
    throw;
  }

  UniqueFd master;
  std::unique_ptr<linux_::PtyProxy> proxy;
  if (console_ours && created.terminal) {
    master = linux_::recv_fd(console_ours.get());
    proxy = std::make_unique<linux_::PtyProxy>(master.get(), 0, 1);
  }

  std::optional<int> status;
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
        status = reap(created.pid);
      } else if (sig == SIGWINCH) {
        if (proxy) proxy->resize();
      } else {
        ::kill(created.pid, sig);
      }
    }
  }
  if (proxy) proxy->pump();
  proxy.reset();
  cleanup();
  return *status;
}

}  // namespace

void register_run(Cli& cli) {
  auto* sub = cli.app.add_subcommand("run", "create and start a container");
  auto a = std::make_shared<RunArgs>();
  add_create_flags(sub, a->create);
  sub->add_flag("-d,--detach", a->detach, "do not wait for the container");
  sub->add_flag("--keep", a->keep, "do not delete the container after it exits");
  sub->add_flag("--no-subreaper", a->no_subreaper, "do not become a subreaper");
  sub->callback([&cli, a] {
    cli.action = [&cli, a] {
      if (!a->detach) return run_foreground(cli, *a);
      container::create_container(cli.global, a->create);
      try {
        container::start_container(cli.global, a->create.id);
      } catch (...) {
        try {
          container::delete_container(cli.global, a->create.id, true);
        } catch (...) {
        }
        throw;
      }
      return 0;
    };
  });
}

}  // namespace crx::cmd
