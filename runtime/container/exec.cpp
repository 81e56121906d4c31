#include "container/exec.hpp"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <optional>

#include "common/error.hpp"
#include "common/fs.hpp"
#include "container/init.hpp"
#include "container/lifecycle.hpp"
#include "container/process_setup.hpp"
#include "container/sync.hpp"
#include "cgroup/cgroup.hpp"
#include "linux/clone.hpp"
#include "linux/console.hpp"
#include "linux/fds.hpp"
#include "linux/namespaces.hpp"
#include "linux/process_security.hpp"
#include "linux/seccomp.hpp"
#include "state/store.hpp"

namespace crx::container {

namespace {

struct ExecContext {
  const spec::Process* process = nullptr;
  spec::Linux joined;  // the container's namespaces, paths = /proc/<init>/ns/*
  const linux_::SeccompFilter* seccomp = nullptr;
  const spec::Seccomp* seccomp_spec = nullptr;
  std::string state_json;
  int console_fd = -1;
  int preserve_fds = 0;
  const cgroup::Cgroup* cgroup = nullptr;  // the helper joins its v1 part itself
};

std::vector<char*> c_strings(const std::vector<std::string>& v) {
  std::vector<char*> out;
  for (const auto& s : v) out.push_back(const_cast<char*>(s.c_str()));
  out.push_back(nullptr);
  return out;
}

// The exec'd process itself, inside every namespace: console, cwd,
// security, execve.
[[noreturn]] void run_process(const ExecContext& ctx, const SyncChannel& sync) {
  const spec::Process& p = *ctx.process;
  if (p.terminal) attach_console(ctx.console_fd, p);
  std::string exe = find_executable(p.args.at(0), p.env);
  if (::chdir(p.cwd.c_str()) != 0) throw_errno("chdir to cwd (\"" + p.cwd + "\") set in process failed");
  linux_::prepare_preserved_fds(ctx.preserve_fds);
  UniqueFd notify = linux_::finalize_process(p, ctx.seccomp->empty() ? nullptr : ctx.seccomp);
  if (notify && ctx.seccomp_spec)
    linux_::send_seccomp_listener_fd(ctx.seccomp_spec->listener_path, notify.get(), 1,
                                     ctx.seccomp_spec->listener_metadata,
                                     nlohmann::json::parse(ctx.state_json));
  (void)sync;  // closes on execve (CLOEXEC): that EOF tells crx the exec happened
  auto argv = c_strings(p.args);
  auto envp = c_strings(p.env);
  ::execve(exe.c_str(), argv.data(), envp.data());
  throw_errno("exec " + exe);
}

// The helper crx forks: waits until it is in the cgroup, joins the
// namespaces, clones the process into them as crx's child, exits.
[[noreturn]] void exec_helper(const ExecContext& ctx, int sync_fd) {
  SyncChannel sync{UniqueFd(sync_fd)};
  try {
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, nullptr);
    // before the namespaces: the host's /sys/fs/cgroup is still in view
    if (ctx.cgroup) ctx.cgroup->join_v1_as_single_thread();
    sync.expect(SyncType::Continue);
    linux_ns::join_namespaces(ctx.joined);
    long pid = ::syscall(SYS_clone, static_cast<unsigned long>(CLONE_PARENT | SIGCHLD), nullptr, nullptr,
                         nullptr, nullptr);
    if (pid < 0) throw_errno("clone exec process");
    if (pid > 0) {
      sync.send(SyncType::InitPid, static_cast<int32_t>(pid));
      ::_exit(0);
    }
    run_process(ctx, sync);
  } catch (const std::exception& e) {
    try {
      sync.send_error(e);
    } catch (...) {
    }
  }
  ::_exit(127);
}

// Kills and reaps a half-started exec on error.
struct ChildGuard {
  pid_t helper = 0;
  pid_t process = 0;
  bool committed = false;
  ~ChildGuard() {
    if (committed) return;
    for (pid_t p : {process, helper})
      if (p > 0) {
        ::kill(p, SIGKILL);
        ::waitpid(p, nullptr, 0);
      }
  }
};

}  // namespace

nlohmann::json container_config(const GlobalOptions& g, const std::string& id) {
  auto dir = state::StateDir::open(g.root, id);
  return dir.load().config;
}

Executed exec_in_container(const GlobalOptions& g, const ExecOptions& o) {
  state::ContainerState st;
  {
    auto dir = state::StateDir::open(g.root, o.id);
    st = dir.load();
    auto status = current_status(dir, st);
    if (status == state::Status::Stopped)
      throw Error("cannot exec in a stopped container " + o.id + ": container not running");
    if (status == state::Status::Paused) throw Error("cannot exec in a paused container " + o.id);
  }  // the lock is not held while the process runs
  const spec::Process& p = o.process;
  if (p.args.empty()) throw Error("exec: process args must not be empty");
  if (p.terminal && o.console_socket.empty() && o.own_console_fd < 0)
    throw Error("cannot allocate tty if runc will detach without setting console socket");
  if (!p.terminal && !o.console_socket.empty())
    throw Error("cannot use console socket if runc will not detach or allocate tty");

  spec::Spec config = spec::parse_spec(st.config, "state.json config");
  int passed_fds = linux_::passed_fd_count(o.preserve_fds);
  linux_::check_passed_fds_open(passed_fds);
  linux_::SeccompFilter filter;
  if (config.linux.seccomp) filter = linux_::build_seccomp(*config.linux.seccomp);
  std::optional<cgroup::Cgroup> cg;
  if (!st.cgroup.is_null()) cg.emplace(cgroup::Cgroup::load(st.cgroup));

  ExecContext ctx;
  ctx.process = &p;
  for (const auto& [type, path] : linux_ns::namespace_paths(st.pid, config.linux)) {
    const auto* ns = config.linux.find_namespace(type);
    spec::Namespace joined = *ns;
    joined.path = path;
    ctx.joined.namespaces.push_back(joined);
  }
  ctx.seccomp = &filter;
  ctx.seccomp_spec = config.linux.seccomp ? &*config.linux.seccomp : nullptr;
  ctx.state_json = state::oci_state_json(st, state::Status::Running).dump();
  ctx.preserve_fds = passed_fds;
  UniqueFd console;
  if (!o.console_socket.empty()) console = linux_::connect_unix_socket(o.console_socket, "console socket");
  ctx.console_fd = o.own_console_fd >= 0 ? o.own_console_fd : console.get();

  // The helper is born in the cgroup2 part and joins v1 itself: no
  // cgroup.procs write, none of its RCU wait (see cgroup.hpp).
  ctx.cgroup = cg ? &*cg : nullptr;
  UniqueFd unified = cg ? cg->open_unified_dir() : UniqueFd();
  auto [parent_end, child_end] = SyncChannel::make_pair();
  ChildGuard guard;
  auto cloned = linux_::clone_process(0, unified.get(), "fork exec helper");
  guard.helper = cloned.pid;
  if (guard.helper == 0) {
    parent_end.close();
    int fd = ::fcntl(child_end.fd(), F_DUPFD_CLOEXEC, 0);  // stays close-on-exec: EOF at execve
    exec_helper(ctx, fd);
  }
  child_end.close();
  console.reset();
  if (unified && !cloned.in_cgroup) cg->add_process_to_unified(guard.helper);
  parent_end.send(SyncType::Continue);

  for (;;) {
    SyncMsg msg;
    if (!parent_end.receive(msg)) break;  // EOF: execve happened (or the process died)
    if (msg.type == SyncType::Error) SyncChannel::throw_error(msg);
    if (msg.type == SyncType::InitPid) {
      guard.process = msg.value;
      ::waitpid(guard.helper, nullptr, 0);
      guard.helper = 0;
      continue;
    }
    throw Error("exec: unexpected message from the exec helper");
  }
  if (guard.process <= 0) throw Error("exec: the process did not start in container " + o.id);
  if (!o.pid_file.empty()) write_file_atomic(o.pid_file, std::to_string(guard.process), 0644);
  guard.committed = true;
  return Executed{guard.process, p.terminal};
}

}  // namespace crx::container
