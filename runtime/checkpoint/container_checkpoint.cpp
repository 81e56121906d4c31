#include "checkpoint/container_checkpoint.hpp"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <termios.h>
#include <unistd.h>

#include <cerrno>

#include "checkpoint/carried_state.hpp"
#include "checkpoint/criu_rpc.hpp"
#include "checkpoint/external_namespaces.hpp"
#include "checkpoint/outside_terminal.hpp"
#include "checkpoint/recreated_dev.hpp"
#include "checkpoint/recreated_mounts.hpp"
#include "checkpoint/restore_guard.hpp"
#include "common/error.hpp"
#include "common/fs.hpp"
#include "common/log.hpp"
#include "common/scope_guard.hpp"
#include "container/hooks_runner.hpp"
#include "container/lifecycle.hpp"
#include "cgroup/cgroup.hpp"
#include "cgroup/paths.hpp"
#include "linux/console.hpp"
#include "rdma/container_qps.hpp"
#include "rdma/plugin_stats.hpp"
#include "spec/bundle.hpp"
#include "spec/spec.hpp"
#include "state/store.hpp"

namespace crx::checkpoint {
namespace {

bool is_bind(const spec::Mount& m) {
  if (m.type == "bind") return true;
  for (const auto& o : m.options) {
    if (o == "bind" || o == "rbind") return true;
  }
  return false;
}

UniqueFd open_dir(const std::string& path, bool create) {
  if (create) mkdir_p(path, 0700);
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd) throw_errno("open " + path);
  return fd;
}

uint32_t empty_ns_mask(const std::vector<std::string>& names) {
  uint32_t mask = 0;
  for (const auto& n : names) {
    if (n == "network" || n == "net") {
      mask |= CLONE_NEWNET;
    } else {
      throw Error("--empty-ns " + n + ": only network is supported (as in runc)");
    }
  }
  return mask;
}

void apply_flags(CommonOptions& o, const CriuFlags& f) {
  o.tcp_established = f.tcp_established;
  o.ext_unix_sk = f.ext_unix_sk;
  o.shell_job = f.shell_job;
  o.file_locks = f.file_locks;
  o.manage_cgroups_mode = f.manage_cgroups_mode;
}

// Bind mounts and masked files (/dev/null bound over them) as CRIU external
// mounts. Masked directories (tmpfs) are added for the final dump of a
// frozen container by add_recreated_mounts.
void add_dump_mounts(CommonOptions& o, const spec::Spec& s, pid_t pid) {
  for (const auto& m : s.mounts) {
    if (is_bind(m)) o.ext_mounts.push_back({m.destination, m.destination});
  }
  std::string root = "/proc/" + std::to_string(pid) + "/root";
  for (const auto& p : s.linux.masked_paths) {
    struct stat st{};
    if (::stat((root + p).c_str(), &st) == 0 && S_ISCHR(st.st_mode)) {
      o.ext_mounts.push_back({p, p});
    }
  }
}

void add_restore_mounts(CommonOptions& o, const spec::Spec& s, const std::string& rootfs) {
  for (const auto& m : s.mounts) {
    if (!is_bind(m)) continue;
    o.ext_mounts.push_back({m.destination, m.source});
    // CRIU mounts onto the destination inside the rootfs: it must exist.
    std::string target = rootfs + m.destination;
    if (!path_exists(target)) {
      struct stat st{};
      if (::stat(m.source.c_str(), &st) == 0 && !S_ISDIR(st.st_mode)) {
        mkdir_p(target.substr(0, target.rfind('/')), 0755);
        write_file(target, "", 0644);
      } else {
        mkdir_p(target, 0755);
      }
    }
  }
  for (const auto& p : s.linux.masked_paths) o.ext_mounts.push_back({p, "/dev/null"});
}

struct Loaded {
  state::ContainerState st;
  spec::Spec spec;
  std::optional<cgroup::Cgroup> cg;
};

Loaded load(const container::GlobalOptions& g, const std::string& id) {
  auto dir = state::StateDir::open(g.root, id);
  Loaded l;
  l.st = dir.load();
  l.spec = spec::parse_spec(l.st.config, "state.json config");
  if (!l.st.cgroup.is_null() && !l.st.cgroup.empty()) l.cg = cgroup::Cgroup::load(l.st.cgroup);
  auto status = container::current_status(dir, l.st);
  if (status != state::Status::Running && status != state::Status::Paused) {
    throw Error("container " + id + " is " + state::to_string(status) +
                ": container not running, nothing to checkpoint");
  }
  return l;
}

std::string freezer_dir(const std::optional<cgroup::Cgroup>& cg) {
  if (!cg) return {};
  std::string d = cg->path_for("freezer");
  return d;
}

// rootfs bind-mounted on itself under the state dir: CRIU restores the
// container's mount tree on top of a mount point.
class CriuRoot {
 public:
  CriuRoot(const std::string& rootfs, const std::string& at) : path_(at) {
    mkdir_p(at, 0700);
    if (::mount(rootfs.c_str(), at.c_str(), nullptr, MS_BIND | MS_REC, nullptr) != 0)
      throw_errno("bind-mount " + rootfs + " on " + at);
    mounted_ = true;
  }
  ~CriuRoot() {
    if (mounted_) ::umount2(path_.c_str(), MNT_DETACH);
    ::rmdir(path_.c_str());
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  bool mounted_ = false;
};

// "/dev/pts/N" of a pty master, the payload runc's console protocol sends.
std::string pty_name(int master) {
  unsigned index = 0;
  if (::ioctl(master, TIOCGPTN, &index) != 0) return "/dev/pts/?";
  return "/dev/pts/" + std::to_string(index);
}

// The verbs plugin stops a container's QPs when it dumps them (partners
// pause); a container that runs on after a dump (--leave-running, a failed
// dump, a pre-dump) gets them running again. Only logs: the caller's own
// outcome (or error) stays what it was. Returns why it failed, or "".
std::string resume_verbs_quietly(const container::GlobalOptions& g, const std::string& id) {
  try {
    int n = rdma::ContainerQps(g).resume_stopped(id);
    if (n > 0) log::debug("checkpoint: resumed " + std::to_string(n) + " stopped QPs of " + id);
    return {};
  } catch (const std::exception& e) {
    log::warn("checkpoint: resuming the stopped QPs of " + id + ": " + e.what());
    return e.what();
  }
}

[[noreturn]] void throw_not_resumed(const std::string& id, const std::string& why) {
  throw Error("checkpoint of " + id + " written, but its QPs stay stopped (its RDMA partners "
              "paused): " + why);
}

void write_pid_file(const std::string& path, pid_t pid) {
  if (path.empty()) return;
  write_file_atomic(path, std::to_string(pid), 0644);
}

}  // namespace

SourceContainer prepare_source(const container::GlobalOptions& g, const std::string& id,
                               const CriuFlags& flags) {
  Loaded l = load(g, id);
  SourceContainer s;
  s.pid = l.st.pid;
  s.freezer_dir = freezer_dir(l.cg);
  s.base.pid = l.st.pid;
  s.base.root = l.st.rootfs;
  apply_flags(s.base, flags);
  add_dump_mounts(s.base, l.spec, l.st.pid);
  add_dump_external_namespaces(s.base, l.spec, l.st.pid);
  s.base.empty_ns = empty_ns_mask(flags.empty_ns);
  s.base.auto_dedup = flags.auto_dedup;
  s.base.orphan_pts_master = l.spec.process.terminal;
  s.base.freeze_cgroup = s.freezer_dir;
  // With TCP connections to keep, the lock is iptables as CRIU has always
  // done it (its per-connection rules and the restore side match that).
  // A namespace joined by path is not CRIU's to lock: with nftables the
  // restore still tries to delete a lock table that was never made there
  // (and libnftables says so on stderr).
  s.base.nftables_network_lock = !flags.tcp_established && !joins_network_namespace(l.spec);
  s.spec = std::move(l.spec);
  s.state_dir = state::StateDir::open(g.root, id).path();
  s.paused = l.cg && l.cg->frozen();
  s.state = std::move(l.st);
  return s;
}

std::vector<OutsideProcess> check_outside_processes(const SourceContainer& s, bool kill_exec) {
  auto outside = container_processes_outside_tree(s.state);
  if (!outside.empty() && !kill_exec) throw Error(outside_processes_error(s.state.id, outside));
  return outside;
}

void add_recreated_mounts(DumpOptions& o, const SourceContainer& s) {
  for (auto& m : recreated_dump_mounts(s.spec, s.pid)) {
    log::debug("checkpoint: " + m.key + " is recreated on restore, not dumped");
    o.ext_mounts.push_back(std::move(m));
  }
  if (auto dev = recreated_dev_mount(s.spec, s.pid, s.state_dir + "/criu-dev-check")) {
    log::debug("checkpoint: /dev is recreated on restore, not dumped");
    o.ext_mounts.push_back(std::move(*dev));
  }
}

void freeze_container(const container::GlobalOptions& g, const std::string& id) {
  Loaded l = load(g, id);
  if (!l.cg) throw Error("container " + id + " has no cgroup to freeze");
  l.cg->freeze();
}

void kill_frozen_container(const container::GlobalOptions& g, const std::string& id) {
  auto dir = state::StateDir::open(g.root, id);
  auto st = dir.load();
  if (st.cgroup.is_null() || st.cgroup.empty()) return;
  cgroup::Cgroup::load(st.cgroup).kill_all();
}

void thaw_container(const container::GlobalOptions& g, const std::string& id) {
  auto dir = state::StateDir::open(g.root, id);
  auto st = dir.load();
  if (st.cgroup.is_null() || st.cgroup.empty()) return;
  cgroup::Cgroup::load(st.cgroup).thaw();
}

void checkpoint_container(const container::GlobalOptions& g, const std::string& id,
                          const CheckpointRequest& r) {
  if (r.image_path.empty()) throw Error("checkpoint: --image-path is required");
  SourceContainer src = prepare_source(g, id, r.flags);
  // Before anything is frozen: every process of the container is in the
  // init's tree, or the caller accepted to lose the others (--kill-exec).
  // A pre-dump loses nothing (the container runs on).
  std::vector<OutsideProcess> left_out;
  if (!r.pre_dump) left_out = check_outside_processes(src, r.kill_exec);
  UniqueFd images = open_dir(r.image_path, true);
  UniqueFd work = open_dir(r.work_path.empty() ? r.image_path : r.work_path, true);
  DumpOptions o = src.base;
  o.images_dir_fd = images.get();
  o.work_dir_fd = work.get();
  o.log_file = r.pre_dump ? "pre-dump.log" : "dump.log";
  o.parent_img = r.parent_path;
  o.leave_running = r.leave_running || r.pre_dump;
  o.track_mem = r.pre_dump || !r.parent_path.empty();
  o.lazy_pages = r.flags.lazy_pages;
  o.status_fd = r.status_fd;
  if (!r.page_server.empty()) {
    size_t colon = r.page_server.rfind(':');
    if (colon == std::string::npos) throw Error("--page-server wants ADDRESS:PORT");
    o.page_server = PageServerTarget{r.page_server.substr(0, colon),
                                     std::stoi(r.page_server.substr(colon + 1)), -1};
  }
  if (r.pre_dump) {
    ScopeGuard resume_verbs([&] { resume_verbs_quietly(g, id); });  // done or failed
    criu_pre_dump(o);
    return;
  }
  // The final dump of a frozen container can leave its empty tmpfs mounts
  // to the restore (add_recreated_mounts): crx freezes it first, so nothing
  // lands in them after the check, and CRIU, finding the cgroup frozen,
  // leaves it frozen; crx then kills or thaws it (as a migration does).
  // Not with --tcp-established without --leave-running (killing the tasks
  // would reset the connections CRIU keeps locked) nor with lazy pages.
  std::optional<cgroup::Cgroup> cg = load(g, id).cg;
  bool freeze_first = cg && !src.freezer_dir.empty() && !r.flags.lazy_pages &&
                      (r.leave_running || !r.flags.tcp_established);
  bool was_frozen = false;
  // Until the dump is done, a failure leaves the container as it found it.
  ScopeGuard thaw_again([&] {
    if (freeze_first && !was_frozen) cg->thaw();
  });
  if (freeze_first) {
    was_frozen = cg->frozen();
    if (!was_frozen) cg->freeze();
    // Frozen, nothing can start: look again (a `crx exec` may have come
    // in since the first look).
    left_out = check_outside_processes(src, r.kill_exec);
    add_recreated_mounts(o, src);
    o.leave_running = true;
  }
  write_carried_state(r.image_path, carried_state_of(src.state, src.paused));
  // Debian's CRIU 3.17.1 looks the terminal up as a file on a mount of
  // the container; the caller's /dev/pts is not one, --shell-job or not.
  bool outside_terminal = r.flags.shell_job && stdio_is_outside_terminal(src.pid);
  auto report_left_out = [&] {
    if (left_out.empty()) return;
    log::warn("checkpoint of " + id + ": --kill-exec: not in the images, " +
              (r.leave_running ? "running on here: " : "killed: ") + describe(left_out));
  };
  {
    // A failed dump leaves the tasks running: their verbs too.
    ScopeGuard resume_verbs([&] { resume_verbs_quietly(g, id); });
    try {
      criu_dump(o);
    } catch (const Error& e) {
      if (!outside_terminal) throw;
      throw Error("--shell-job: the container's terminal comes from outside its mount "
                  "namespace, which this CRIU cannot dump (" + std::string(e.what()) + ")",
                  e.cause(), e.sys_errno());
    }
    resume_verbs.dismiss();
  }
  thaw_again.dismiss();
  if (freeze_first) {
    if (!r.leave_running) {
      kill_frozen_container(g, id);
      container::delete_container(g, id, true);
    } else {
      std::string why = resume_verbs_quietly(g, id);
      if (!was_frozen) cg->thaw();
      if (!why.empty()) throw_not_resumed(id, why);
    }
    report_left_out();
    return;
  }
  if (r.leave_running) {
    if (std::string why = resume_verbs_quietly(g, id); !why.empty()) throw_not_resumed(id, why);
  }
  if (!o.leave_running) {
    // CRIU killed the tasks; remove what is left like runc does.
    container::delete_container(g, id, true);
  }
  report_left_out();
}

pid_t restore_container(const container::GlobalOptions& g, const std::string& id,
                        const RestoreRequest& r) {
  if (r.image_path.empty()) throw Error("restore: --image-path is required");
  spec::Bundle b = spec::load_bundle(r.bundle);
  const std::string& bundle = b.dir;
  const std::string& rootfs = b.rootfs;
  spec::Spec& s = b.spec;
  // What the checkpointed container was beyond its processes: its cgroup
  // gets the resources `crx update` gave it, not the bundle's.
  std::optional<CarriedState> carried = read_carried_state(r.image_path);
  if (carried && carried->resources.is_object()) {
    s = spec::parse_spec(config_with_resources(s.raw, *carried),
                         "config.json with the checkpoint's resources");
  }
  std::string pid_file = r.pid_file;
  if (pid_file.empty() && r.carried_pid_file && carried) pid_file = carried->pid_file;

  auto dir = state::StateDir::create(g.root, id);
  std::optional<cgroup::Cgroup> cg;
  // Kills what CRIU made if we die before the restore ends (restore_guard.hpp).
  std::optional<RestoreGuard> guard;
  // A restore that fails removes what it made.
  ScopeGuard undo([&] {
    if (cg) {
      try {
        cg->kill_all();
        cg->destroy();
      } catch (const std::exception& e) {
        log::warn(std::string("restore cleanup: ") + e.what());
      }
    }
    dir.remove();
  });
  cg = cgroup::Cgroup::create(s.linux, id, g.systemd_cgroup);
  record_restoring_cgroup(dir.path(), cg->save().dump());
  RestoreLeftovers leftovers;
  for (const auto& [ctrl, cdir] : cg->dirs()) leftovers.cgroup_dirs.push_back(cdir);
  leftovers.title = restore_title(r.image_path);
  guard.emplace(std::move(leftovers));
  UniqueFd images = open_dir(r.image_path, false);
  UniqueFd work = open_dir(r.work_path.empty() ? r.image_path : r.work_path, true);
  CriuRoot root(rootfs, dir.path() + "/criu-root");
  // Fresh tmpfs for the mounts the dump left out; detached again (here:
  // destroyed) once CRIU has bound them into the container.
  StagedTmpfs tmpfs(s, dir.path() + "/criu-tmpfs");

  RestoreOptions o;
  o.images_dir_fd = images.get();
  o.work_dir_fd = work.get();
  o.log_file = "restore.log";
  o.root = root.path();
  apply_flags(o, r.flags);
  if (!o.manage_cgroups_mode) o.manage_cgroups_mode = CgroupMode::Soft;
  add_restore_mounts(o, s, rootfs);
  auto joined_namespaces = add_restore_external_namespaces(o, s);
  for (const auto& m : tmpfs.ext_mounts()) o.ext_mounts.push_back(m);
  o.rst_sibling = r.as_child;
  o.auto_dedup = r.flags.auto_dedup;
  o.lazy_pages = r.flags.lazy_pages;
  o.notify_scripts = true;
  o.orphan_pts_master = s.process.terminal;
  // The tasks go into the cgroup made above, also when the id (and so
  // the default cgroupsPath) differs from the checkpointed container's;
  // without roots CRIU would put them back into the old one's cgroup.
  // The root task also joins it explicitly below.
  o.cgroup_roots = cgroup::criu_cgroup_roots(
      cgroup::parse_mountinfo(read_file("/proc/self/mountinfo")), cg->dirs());
  const bool paused_again = r.keep_paused && carried && carried->paused;
  pid_t restored = 0;
  bool held = false;
  auto notify = [&](Notification& n) {
    if (n.script == "setup-namespaces" && n.pid > 0) {
      restored = n.pid;
      cg->add_process(n.pid);
      // As runc 1.1.5 (criuNotifications, "setup-namespaces"): prestart
      // and createRuntime run again, now that the namespaces exist;
      // poststart does not (runc runs it only when it starts an init).
      if (s.hooks.has_runtime_create_hooks()) {
        state::ContainerState hs;
        hs.id = id;
        hs.bundle = bundle;
        hs.rootfs = rootfs;
        hs.pid = n.pid;
        hs.created = state::now_rfc3339();
        hs.annotations = carried ? carried->annotations : s.annotations;
        std::string js = state::oci_state_json(hs, state::Status::Creating).dump();
        container::run_hooks_or_throw(s.hooks.prestart, "prestart", js);
        container::run_hooks_or_throw(s.hooks.create_runtime, "createRuntime", js);
      }
    } else if (n.script == "pre-resume") {
      // The verbs plugin's late hook ran before this: it says in the
      // images dir whether the objects came back (it cannot fail CRIU).
      rdma::check_verbs_restore(r.image_path);
      // A paused container stays paused: frozen while CRIU still holds
      // its tasks (as CRIU restores a v1 freezer state), so not one
      // instruction of theirs runs when CRIU lets them go.
      if (paused_again) cg->freeze();
      held = true;
      if (r.hold) r.hold();
    } else if (n.script == "orphan-pts-master" && n.fd) {
      // CRIU made a new pty in the container's devpts for the slave the
      // tasks had; its master goes to the console socket as on create.
      if (r.console_socket.empty()) {
        log::warn("restore: the container has a terminal but no --console-socket was "
                  "given; its pty master is closed");
      } else {
        linux_::send_console_fd(r.console_socket, n.fd.get(), pty_name(n.fd.get()));
      }
    }
  };
  o.defer_verbs_resume = r.defer_verbs_resume;
  pid_t pid = criu_restore(o, notify);
  if (!held) rdma::check_verbs_restore(r.image_path);
  if (!held && paused_again) cg->freeze();
  if (!held && r.hold) r.hold();
  if (pid <= 0) pid = restored;

  state::ContainerState st;
  st.id = id;
  st.bundle = bundle;
  st.rootfs = rootfs;
  st.created = state::now_rfc3339();
  st.pid = pid;
  st.pid_start_time = state::process_start_time(pid);
  st.annotations = carried ? carried->annotations : s.annotations;
  st.owner = carried ? carried->owner : "";
  st.cgroup = cg->save();
  st.config = s.raw;
  st.systemd_cgroup = g.systemd_cgroup;
  st.pid_file = pid_file;
  dir.save(st);
  forget_restoring_cgroup(dir.path());
  write_pid_file(pid_file, pid);
  undo.dismiss();
  guard->disarm();
  return pid;
}

}  // namespace crx::checkpoint
