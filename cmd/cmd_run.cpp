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
#include "commands.hpp"
#include "foreground.hpp"
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
  if (console_ours && created.terminal) master = linux_::recv_fd(console_ours.get());
  int status = wait_foreground(signals, created.pid, master ? master.get() : -1);
  cleanup();
  return status;
}

}  // namespace

void register_run(Cli& cli) {
  auto* sub = add_command(cli, "run");
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
