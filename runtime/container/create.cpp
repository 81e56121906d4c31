#include "container/create.hpp"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <optional>

#include "common/child_process.hpp"
#include "common/error.hpp"
#include "common/fs.hpp"
#include "common/log.hpp"
#include "common/scope_guard.hpp"
#include "container/hooks_runner.hpp"
#include "container/init.hpp"
#include "container/sync.hpp"
#include "cgroup/cgroup.hpp"
#include "linux/clone.hpp"
#include "linux/console.hpp"
#include "linux/fds.hpp"
#include "linux/lsm.hpp"
#include "linux/sysctl.hpp"
#include "linux/namespaces.hpp"
#include "linux/rlimits.hpp"
#include "linux/seccomp.hpp"
#include "spec/bundle.hpp"
#include "spec/spec.hpp"
#include "state/store.hpp"

namespace crx::container {

namespace {

// The pid file as an absolute path (it need not exist yet); "" stays "".
std::string absolute_pid_file(const std::string& p) {
  if (p.empty() || p[0] == '/') return p;
  char cwd[PATH_MAX];
  if (!::getcwd(cwd, sizeof cwd)) throw_errno("getcwd");
  return std::string(cwd) + "/" + p;
}

void check_spec_is_runnable(const spec::Spec& spec) {
  if (spec.process.args.empty()) throw Error("config.json: .process.args: must not be empty");
  // Without a mount namespace the container is chrooted into its rootfs in
  // the caller's mount namespace (as runc), where nothing is remounted.
  if (!spec.linux.find_namespace("mount") && spec.root.readonly)
    log::warn("config.json: .root.readonly: ignored without a mount namespace (as runc does)");
  linux_::check_host_support(spec);
  // .hostname with a uts namespace joined by path sets the hostname of that
  // namespace, as runc does; without any uts namespace parse_spec refuses it.
  const auto* user = spec.linux.find_namespace("user");
  if (user && user->path.empty() && (spec.linux.uid_mappings.empty() || spec.linux.gid_mappings.empty()))
    throw Error("config.json: .linux.uidMappings/gidMappings: required with a new user namespace");
}

// A child that failed early has closed its end: its Error message is
// waiting in the socket and the setup loop reports it, not this send.
void tell_cgroup_joined(const SyncChannel& parent_end) {
  try {
    parent_end.send(SyncType::CgroupJoined);
  } catch (const Error&) {
  }
}

}  // namespace

Created create_container(const GlobalOptions& g, const CreateOptions& o) {
  int passed_fds = linux_::passed_fd_count(o.preserve_fds);
  linux_::check_passed_fds_open(passed_fds);
  spec::Bundle b = spec::load_bundle(o.bundle);
  const std::string& bundle = b.dir;
  const std::string& rootfs = b.rootfs;
  spec::Spec& spec = b.spec;
  linux_::add_listen_fds_env(spec.process.env, linux_::listen_fd_count());
  linux_::validate_sysctls(spec.linux);
  check_spec_is_runnable(spec);
  // refused by runc's spec conversion too, in the same words
  if (o.no_pivot && (spec.linux.rootfs_propagation == "private" || spec.linux.rootfs_propagation == "rprivate"))
    throw Error("config.json: .linux.rootfsPropagation: rootfsPropagation of [r]private is not safe "
                "without pivot_root (--no-pivot)", Cause::Invalid);
  if (spec.process.terminal && o.console_socket.empty() && o.own_console_fd < 0)
    throw Error("cannot allocate tty if runc will detach without setting console socket");
  if (!spec.process.terminal && !o.console_socket.empty())
    throw Error("cannot use console socket if runc will not detach or allocate tty");
  linux_::SeccompFilter filter;
  if (spec.linux.seccomp) filter = linux_::build_seccomp(*spec.linux.seccomp);

  UniqueFd console;
  if (!o.console_socket.empty()) console = linux_::connect_unix_socket(o.console_socket, "console socket");

  // Everything create makes is undone, in reverse, when it fails: the
  // guards below and the ChildProcess of the init.
  auto dir = state::StateDir::create(g.root, o.id);
  ScopeGuard remove_dir([&] { dir.remove(); });
  state::ContainerState st;
  st.id = o.id;
  st.bundle = bundle;
  st.rootfs = rootfs;
  st.created = state::now_rfc3339();
  st.annotations = spec.annotations;
  st.config = spec.raw;
  st.systemd_cgroup = g.systemd_cgroup;
  st.owner = "";
  st.pid_file = absolute_pid_file(o.pid_file);
  // Saved with where the cgroup will be before anything is made, so a create
  // killed half way leaves delete --force everything it needs to clean up.
  auto cg = cgroup::Cgroup::plan(spec.linux.cgroups_path, o.id, g.systemd_cgroup);
  ScopeGuard remove_cgroup([&] {
    cg.kill_all();
    cg.destroy();
  });
  st.cgroup = cg.save();
  dir.save(st);

  if (::mkfifo(dir.fifo_path().c_str(), 0622) != 0) throw_errno("mkfifo " + dir.fifo_path());
  // 0622 despite the umask: an init in a user namespace opens it as "other"
  if (::chmod(dir.fifo_path().c_str(), 0622) != 0) throw_errno("chmod " + dir.fifo_path());
  UniqueFd fifo(::open(dir.fifo_path().c_str(), O_PATH | O_CLOEXEC));
  if (!fifo) throw_errno("open " + dir.fifo_path());

  auto resources = cgroup::effective_resources(spec.linux);
  cg.make(&resources);

  int ns_flags = linux_ns::new_namespace_flags(spec.linux);
  if (ns_flags & CLONE_NEWTIME) {
    // Offsets can only be set before a process lives in the namespace:
    // make it ours "for children", set them, and let the clone land in it.
    linux_ns::enter_new_time_namespace_for_children(spec.linux);
    ns_flags &= ~CLONE_NEWTIME;
  }
  auto [parent_end, child_end] = SyncChannel::make_pair();

  InitContext ctx;
  ctx.spec = &spec;
  ctx.rootfs = rootfs;
  ctx.bundle = bundle;
  ctx.sync_fd = child_end.fd();
  ctx.fifo_fd = fifo.get();
  ctx.console_fd = o.own_console_fd >= 0 ? o.own_console_fd : console.get();
  ctx.no_pivot = o.no_pivot;
  ctx.new_userns = (ns_flags & CLONE_NEWUSER) != 0;
  ctx.new_cgroupns = (ns_flags & CLONE_NEWCGROUP) != 0;
  // The init unshares its cgroup namespace itself once it is in its cgroup,
  // so the namespace's root is the container's cgroup.
  ns_flags &= ~CLONE_NEWCGROUP;
  ctx.preserve_fds = passed_fds;
  ctx.seccomp = &filter;

  // Joining the cgroup without the kernel's RCU wait (see cgroup.hpp): the
  // child is born in the cgroup2 part and joins v1 itself. A child in a new
  // user namespace cannot write the host's cgroup files: the parent
  // attaches it, while the child already does its mounts.
  bool child_joins_itself = !ctx.new_userns;
  UniqueFd unified = child_joins_itself ? cg.open_unified_dir() : UniqueFd();
  if (child_joins_itself) ctx.join_cgroup_v1 = &cg;

  // The child must not keep the container lock alive after we exit.
  int lock_fd = dir.lock_fd();
  auto cloned = linux_::clone_process(ns_flags, unified.get(), "clone container init");
  if (cloned.pid == 0) {
    ::close(lock_fd);
    parent_end.close();
    ctx.state_json = state::oci_state_json(st, state::Status::Creating).dump();
    container_init(ctx);
  }
  // The child cloned here is the init, unless it joins a pid namespace:
  // then it forks the init there (InitPid) and exits.
  ChildProcess init(cloned.pid);
  child_end.close();

  if (ctx.new_userns) linux_ns::write_id_maps(init.pid(), spec.linux);
  // from here: a child in a new user namespace could raise but not lower it
  if (spec.process.oom_score_adj) linux_::write_oom_score_adj(*spec.process.oom_score_adj, init.pid());
  if (child_joins_itself) {
    if (unified && !cloned.in_cgroup) cg.add_process_to_unified(init.pid());
    parent_end.send(SyncType::Continue);
  } else {
    parent_end.send(SyncType::Continue);
    cg.add_process(init.pid());
    tell_cgroup_joined(parent_end);
  }

  for (;;) {
    SyncMsg msg;
    if (!parent_end.receive(msg)) throw Error("container init exited during setup");
    if (msg.type == SyncType::Error) SyncChannel::throw_error(msg);
    if (msg.type == SyncType::InitPid) {
      init.wait();  // the intermediate exits after forking
      init = ChildProcess(msg.value);
      continue;
    }
    if (msg.type == SyncType::RunRuntimeHooks) {
      st.pid = init.pid();
      st.pid_start_time = state::process_start_time(init.pid());
      dir.save(st);
      std::string state_json = state::oci_state_json(st, state::Status::Creating).dump();
      run_hooks_or_throw(spec.hooks.prestart, "prestart", state_json);
      run_hooks_or_throw(spec.hooks.create_runtime, "createRuntime", state_json);
      parent_end.send(SyncType::HooksDone);
      continue;
    }
    if (msg.type == SyncType::Created) break;
    throw Error("container setup: unexpected message from init");
  }

  st.pid = init.pid();
  st.pid_start_time = state::process_start_time(init.pid());
  dir.save(st);
  if (!o.pid_file.empty()) write_file_atomic(o.pid_file, std::to_string(init.pid()), 0644);
  remove_cgroup.dismiss();
  remove_dir.dismiss();
  return Created{init.release(), spec.process.terminal};
}

}  // namespace crx::container
