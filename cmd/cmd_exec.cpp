// crx exec: run one more process in a running container (runc's flags).
// In the foreground crx waits for it, forwards signals, proxies its tty and
// exits with its status; with --detach it returns once the process runs.
#include <sys/socket.h>

#include <memory>

#include "cli.hpp"
#include "commands.hpp"
#include "common/error.hpp"
#include "container/exec.hpp"
#include "container/exec_process.hpp"
#include "foreground.hpp"
#include "linux/console.hpp"

namespace crx::cmd {

namespace {

struct ExecArgs {
  std::string id;
  std::string process_file;
  container::ExecOverrides over;
  bool detach = false;
  std::string pid_file;
  std::string console_socket;
  int preserve_fds = 0;
  bool ignore_paused = false;
  std::string cgroup;
};

int run_exec(Cli& cli, CLI::App* sub, ExecArgs& a) {
  a.over.args = sub->remaining();
  if (!a.over.args.empty() && a.over.args.front() == "--") a.over.args.erase(a.over.args.begin());
  container::ExecOptions o;
  o.id = a.id;
  o.detach = a.detach;
  o.pid_file = a.pid_file;
  o.console_socket = a.console_socket;
  o.preserve_fds = a.preserve_fds;
  if (!a.process_file.empty()) {
    o.process = container::exec_process_from_file(a.process_file);
  } else {
    if (a.over.args.empty()) throw Error("exec: a command is required (or --process file.json)");
    o.process = container::exec_process(container::container_config(cli.global, a.id), a.over);
  }
  if (a.detach) {
    container::exec_in_container(cli.global, o);
    return 0;
  }
  BlockedSignals signals;
  UniqueFd console_ours, console_theirs;
  if (o.process.terminal && o.console_socket.empty()) {
    int sv[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) throw_errno("socketpair");
    console_ours.reset(sv[0]);
    console_theirs.reset(sv[1]);
    o.own_console_fd = console_theirs.get();
  }
  auto executed = container::exec_in_container(cli.global, o);
  console_theirs.reset();
  UniqueFd master;
  if (console_ours && executed.terminal) master = linux_::recv_fd(console_ours.get());
  return wait_foreground(signals, executed.pid, master ? master.get() : -1);
}

}  // namespace

void register_exec(Cli& cli) {
  auto* sub = add_command(cli, "exec");
  auto a = std::make_shared<ExecArgs>();
  sub->add_option("-p,--process", a->process_file, "path to a process.json (OCI Process object)");
  sub->add_flag("-t,--tty", a->over.tty, "allocate a pseudo-TTY");
  sub->add_option("--cwd", a->over.cwd, "current working directory in the container");
  sub->add_option("-e,--env", a->over.env, "set an environment variable (repeatable)")->allow_extra_args(false);
  sub->add_option("-u,--user", a->over.user, "uid[:gid] to run as");
  sub->add_option("-g,--additional-gids", a->over.additional_gids, "additional gids (repeatable)")->allow_extra_args(false);
  sub->add_option("-c,--cap", a->over.caps, "add a capability (repeatable)")->allow_extra_args(false);
  sub->add_flag("--no-new-privs", a->over.no_new_privs, "set no_new_privileges");
  sub->add_option("--apparmor", a->over.apparmor, "apparmor profile (apparmor is not enabled: ignored)");
  sub->add_option("--process-label", a->over.process_label, "SELinux label (ignored)");
  sub->add_flag("-d,--detach", a->detach, "do not wait for the process");
  sub->add_option("--pid-file", a->pid_file, "write the process' host pid here");
  sub->add_option("--console-socket", a->console_socket, "unix socket that receives the pty master");
  sub->add_option("--preserve-fds", a->preserve_fds, "pass N more fds (3..3+N-1) to the process");
  sub->add_flag("--ignore-paused", a->ignore_paused, "accepted for runc compatibility");
  sub->add_option("--cgroup", a->cgroup, "accepted for runc compatibility (the container's cgroup is used)");
  sub->add_option("id", a->id, "container id")->required();
  sub->prefix_command();
  sub->fallthrough(false);  // the command's args are not crx's positionals
  sub->callback([&cli, sub, a] { cli.action = [&cli, sub, a] { return run_exec(cli, sub, *a); }; });
}

}  // namespace crx::cmd
