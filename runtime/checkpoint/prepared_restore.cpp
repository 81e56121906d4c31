#include "checkpoint/prepared_restore.hpp"

#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <termios.h>
#include <unistd.h>

#include "checkpoint/carried_state.hpp"
#include "checkpoint/cgroup_yard.hpp"
#include "checkpoint/criu_root.hpp"
#include "checkpoint/image_dirs.hpp"
#include "checkpoint/criu_plugins.hpp"
#include "checkpoint/criu_rpc.hpp"
#include "checkpoint/external_namespaces.hpp"
#include "checkpoint/fresh_netns.hpp"
#include "checkpoint/mount_images.hpp"
#include "checkpoint/nft_lock_tables.hpp"
#include "checkpoint/recreated_mounts.hpp"
#include "checkpoint/restore_guard.hpp"
#include "checkpoint/uts_ipc_anew.hpp"
#include "cgroup/paths.hpp"
#include "common/error.hpp"
#include "common/fs.hpp"
#include "common/log.hpp"
#include "common/scope_guard.hpp"
#include "container/hooks_runner.hpp"
#include "linux/console.hpp"
#include "rdma/plugin_stats.hpp"

namespace crx::checkpoint {

namespace {

// config.json asks for a network namespace of the container's own (not
// one joined by path, not the host's).
bool wants_new_netns(const spec::Spec& s) {
  const auto* ns = s.linux.find_namespace("network");
  return ns && ns->path.empty();
}

bool wants_new_uts_ipc(const spec::Spec& s) {
  const auto* uts = s.linux.find_namespace("uts");
  const auto* ipc = s.linux.find_namespace("ipc");
  return uts && uts->path.empty() && ipc && ipc->path.empty();
}

// Into the restored init's network namespace; init 0: CRIU named none.
void apply_carried_sysctls(pid_t init, const NetSysctls& sysctls) {
  if (sysctls.empty()) return;
  if (init <= 0)
    throw Error("restore: CRIU named no restored init to set the carried network sysctls in",
                Cause::Other);
  apply_net_sysctls(init, sysctls);
}

// Bind mounts and masked files as CRIU external mounts (key: the
// destination, value: the source on this host). CRIU mounts onto the
// destination inside the rootfs: it is made if missing.
void add_restore_mounts(CommonOptions& o, const spec::Spec& s, const std::string& rootfs) {
  for (const auto& m : s.mounts) {
    if (!is_bind_mount(m)) continue;
    o.ext_mounts.push_back({m.destination, m.source});
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

// "/dev/pts/N" of a pty master, the payload runc's console protocol sends.
std::string pty_name(int master) {
  unsigned index = 0;
  if (::ioctl(master, TIOCGPTN, &index) != 0) return "/dev/pts/?";
  return "/dev/pts/" + std::to_string(index);
}

void write_pid_file(const std::string& path, pid_t pid) {
  if (path.empty()) return;
  write_file_atomic(path, std::to_string(pid), 0644);
}

// Does images_dir lie where the guard was told the restore's tasks will
// take their title from?
bool images_where_prepared(const RestoreRequest& r, const std::string& images_dir) {
  if (!r.images_below) return images_dir == r.image_path;
  std::string root = r.image_path;
  while (root.size() > 1 && root.back() == '/') root.pop_back();
  return images_dir.size() > root.size() + 1 && images_dir.compare(0, root.size(), root) == 0 &&
         images_dir[root.size()] == '/';
}

}  // namespace

PreparedRestore::PreparedRestore(const container::GlobalOptions& g, std::string id,
                                 RestoreRequest r)
    : g_(g), id_(std::move(id)), r_(std::move(r)) {
  if (r_.image_path.empty()) throw Error("restore: --image-path is required", Cause::Invalid);
  // `crx restore`: the images are there already, and checked first, before
  // anything is made (prepare() creates the work dir, which is the images
  // dir unless --work-path says otherwise). A migration's arrive later.
  if (!r_.images_below) open_image_dir(r_.image_path, false);
  try {
    prepare();
  } catch (...) {
    release();
    throw;
  }
}

PreparedRestore::~PreparedRestore() {
  if (!done_) release();
}

void PreparedRestore::prepare() {
  bundle_ = spec::load_bundle(r_.bundle);
  const spec::Spec& s = bundle_.spec;
  dir_.emplace(state::StateDir::create(g_.root, id_));
  state_dir_ = dir_->path();
  struct stat st{};
  if (::fstat(dir_->lock_fd(), &st) != 0) throw_errno("stat " + state_dir_);
  state_dir_dev_ = st.st_dev;
  state_dir_ino_ = st.st_ino;
  // The bundle's limits; the checkpoint's own (crx update) replace them in
  // run(), once its crx-container.json is here.
  cg_ = cgroup::Cgroup::create(s.linux, id_, g_.systemd_cgroup);
  record_restoring_cgroup(dir_->path(), cg_->save().dump());
  // Kills what CRIU makes if we die before the restore ends (restore_guard.hpp).
  RestoreLeftovers leftovers;
  for (const auto& [ctrl, cdir] : cg_->dirs()) leftovers.cgroup_dirs.push_back(cdir);
  leftovers.title = restore_title(r_.image_path) + (r_.images_below ? "/" : "");
  leftovers.whole_title = !r_.images_below;
  guard_ = std::make_unique<RestoreGuard>(std::move(leftovers));
  std::string work_path = r_.work_path.empty() ? r_.image_path : r_.work_path;
  work_ = open_image_dir(work_path, true);
  root_ = std::make_unique<CriuRoot>(bundle_.rootfs, dir_->path() + "/criu-root");
  // Fresh tmpfs for the mounts the dump left out, and /dev; detached again
  // once CRIU has bound them into the container.
  tmpfs_ = std::make_unique<StagedTmpfs>(s, dir_->path() + "/criu-tmpfs");

  o_.work_dir_fd = work_.get();
  o_.log_file = "restore.log";
  o_.root = root_->path();
  apply_criu_flags(o_, r_.flags);
  if (!o_.manage_cgroups_mode) o_.manage_cgroups_mode = CgroupMode::Soft;
  add_restore_mounts(o_, s, bundle_.rootfs);
  joined_namespaces_ = add_restore_external_namespaces(o_, s);
  // A migration's images may hold no network namespace (one moved as a new
  // one): the namespace its tasks join is made now, outside the window.
  if (r_.images_below && wants_new_netns(s)) new_netns_ = new_netns();
  for (const auto& m : tmpfs_->ext_mounts()) o_.ext_mounts.push_back(m);
  o_.rst_sibling = r_.as_child;
  o_.auto_dedup = r_.flags.auto_dedup;
  o_.lazy_pages = r_.flags.lazy_pages;
  o_.notify_scripts = true;
  o_.orphan_pts_master = s.process.terminal;
  // The tasks go into the cgroup made above, also when the id (and so the
  // default cgroupsPath) differs from the checkpointed container's;
  // without roots CRIU would put them back into the old one's cgroup. The
  // root task also joins it explicitly (run()).
  const auto hierarchies = cgroup::parse_mountinfo(read_file("/proc/self/mountinfo"));
  o_.cgroup_roots = cgroup::criu_cgroup_roots(hierarchies, cg_->dirs());
  cgroup_v2_path_ = cgroup::criu_v2_path(hierarchies, cg_->dirs());
  // CRIU's cgroup yard, made now instead of inside the restore (and
  // without a cgroup2 mount of CRIU's own, which would reset the host's
  // cgroup2 options): on a pure cgroup2 host whose cgroup2 mount shows the
  // hierarchy from its root, as CRIU's own mount would (cgroup_yard.hpp).
  if (!cgroup_v2_path_.empty() && o_.manage_cgroups_mode != CgroupMode::Ignore) {
    const cgroup::Hierarchy* h = cgroup::hierarchy_of(hierarchies, cg_->dirs().at("unified"));
    if (h && h->v2 && h->root == "/") {
      yard_ = std::make_unique<CgroupYard>(dir_->path() + "/criu-cgyard", h->mountpoint);
      o_.cgroup_yard = yard_->path();
    }
  }
  o_.defer_verbs_resume = r_.defer_verbs_resume;

  // What CRIU and its libraries print goes into its log (criu_rpc.cpp says
  // why); our copy of the fd closes once the child has its own.
  UniqueFd output(::openat(work_.get(), o_.log_file.c_str(),
                           O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600));
  StartedRestore::Setup setup;
  for (const auto& f : o_.inherit_fds) setup.inherit_fds.push_back(f.fd);
  setup.defer_verbs_resume = o_.defer_verbs_resume;
  setup.output_fd = output.get();
  // Ahead of the images (a migration), the verbs plugin is loaded into the
  // waiting criu now: whether run() needs it is known only from the images,
  // and loading it then is 0.1-0.2 s of a TCG guest's frozen window. When
  // run() does not need it, it stays idle there (CRIU calls the plugins of
  // its libdir only).
  if (r_.images_below) setup.preload_verbs_plugin = verbs_plugin_path();
  criu_ = std::make_unique<StartedRestore>(setup);
  // The id stays taken (the dir exists), but its lock goes until run():
  // `crx list` and `crx state` wait for a locked dir, and pre-copy may take
  // minutes. A half-made dir (no state.json) is skipped by `crx list`.
  dir_.reset();
}

std::optional<state::StateDir> PreparedRestore::reopen_state_dir() const {
  std::optional<state::StateDir> d;
  try {
    d.emplace(state::StateDir::open(g_.root, id_));
  } catch (const Error& e) {
    if (e.cause() == Cause::NotFound) return std::nullopt;
    throw;
  }
  struct stat st{};
  if (::fstat(d->lock_fd(), &st) != 0) throw_errno("stat " + state_dir_);
  // Deleted (crx delete --force) and made again by someone else meanwhile.
  if (st.st_dev != state_dir_dev_ || st.st_ino != state_dir_ino_) return std::nullopt;
  return d;
}

std::string PreparedRestore::cgroup_v2_path() const { return cgroup_v2_path_; }

pid_t PreparedRestore::criu_pid() const { return criu_ ? criu_->pid() : -1; }

const std::string& PreparedRestore::state_dir() const { return state_dir_; }

pid_t PreparedRestore::run(const std::string& images_dir, const std::function<void()>& hold,
                           const std::function<void()>& resumed) {
  if (used_) throw Error("restore of " + id_ + ": the prepared restore ran already", Cause::Invalid);
  used_ = true;
  try {
    dir_ = reopen_state_dir();
  } catch (...) {
    release();
    throw;
  }
  if (!dir_) {
    release();
    throw Error("restore of " + id_ + ": its state dir " + state_dir_ +
                    " was removed while the restore was prepared (crx delete --force?)",
                Cause::NotFound);
  }
  if (!images_where_prepared(r_, images_dir))
    throw Error("restore of " + id_ + ": images " + images_dir + " are not where the restore was "
                "prepared for (" + r_.image_path + ")",
                Cause::Invalid);
  try {
    const std::string& bundle = bundle_.dir;
    const std::string& rootfs = bundle_.rootfs;
    spec::Spec& s = bundle_.spec;
    // What the checkpointed container was beyond its processes: its
    // cgroup gets the resources `crx update` gave it, not the bundle's
    // (which prepare() applied).
    if (auto c = read_carried_state(images_dir))
      carried_ = std::make_unique<CarriedState>(std::move(*c));
    const CarriedState* carried = carried_.get();
    if (carried && carries_other_resources(s.raw, *carried)) {
      s = spec::parse_spec(config_with_resources(s.raw, *carried),
                           "config.json with the checkpoint's resources");
      cg_->apply(cgroup::effective_resources(s.linux));
    }
    pid_file_ = r_.pid_file;
    if (pid_file_.empty() && r_.carried_pid_file && carried) pid_file_ = carried->pid_file;

    UniqueFd images = open_image_dir(images_dir, false);
    // The tmpfs contents the dump carried, into the mounts CRIU binds in.
    if (tmpfs_) tmpfs_->fill(images_dir);
    // Or the restored namespace keeps CRIU's lock (nft_lock_tables.hpp).
    drop_criu_lock_tables(images.get());
    RestoreOptions o = o_;
    o.images_dir_fd = images.get();
    if (carried && carried->new_netns_outside_images) {
      // Not ours to guess: the tasks would be in CRIU's (the host's).
      if (!wants_new_netns(s))
        throw Error("restore of " + id_ + ": its images hold no network namespace (the "
                    "container had a new one), and config.json asks for none", Cause::Invalid);
      if (!new_netns_) new_netns_ = new_netns();
      o.join_netns = "/proc/" + std::to_string(::getpid()) + "/fd/" +
                     std::to_string(new_netns_.get());
    }
    // Nor, maybe, its UTS and IPC namespaces: new ones holding what crx
    // carried, made now (that is the frozen container's; uts_ipc_anew.hpp).
    NewUtsIpc uts_ipc;
    if (carried && carried->uts_ipc_outside_images) {
      if (!wants_new_uts_ipc(s))
        throw Error("restore of " + id_ + ": its images hold no UTS and IPC namespaces (the "
                    "container had new ones), and config.json asks for none", Cause::Invalid);
      uts_ipc = new_uts_ipc(*carried->uts_ipc_outside_images);
      const std::string fds = "/proc/" + std::to_string(::getpid()) + "/fd/";
      o.join_uts = fds + std::to_string(uts_ipc.uts.get());
      o.join_ipc = fds + std::to_string(uts_ipc.ipc.get());
    }
    // The verbs plugin only for images it dumped contexts into: loading it
    // (and its providers) takes 0.15 s of a restore in a guest.
    o.plugins = rdma::verbs_dumped(images_dir);
    // Private mounts only: the faster of CRIU's two engines, same tree.
    o.mount_engine_compat = !mounts_propagate(images_dir);
    log::debug("restore of " + id_ + ": CRIU's mount engine " +
               (o.mount_engine_compat ? "compat (no mount propagates)" : "CRIU's default"));
    const bool paused_again = r_.keep_paused && carried && carried->paused;
    restored_ = 0;
    bool held = false;
    // The container becomes this host's, and whoever waits for it to run
    // hears so; what that throws comes out of run() after the clean-up.
    std::exception_ptr resumed_error;
    auto become_ours = [&](pid_t pid) {
      save_state(pid);
      if (!resumed) return;
      try {
        resumed();
      } catch (...) {
        resumed_error = std::current_exception();
      }
    };
    auto freeze_before_release = [&] {
      try {
        cg_->freeze();
      } catch (const std::exception& e) {
        log::warn("restore of " + id_ + ": the restored tasks could not be frozen before CRIU "
                  "lets them go, to be killed: " + e.what());
      }
    };
    auto notify = [&](Notification& n) {
      if (n.script == "setup-namespaces" && n.pid > 0) {
        restored_ = n.pid;
        cg_->add_process(n.pid);
        // As runc 1.1.5 (criuNotifications, "setup-namespaces"): prestart
        // and createRuntime run again, now that the namespaces exist;
        // poststart does not (runc runs it only when it starts an init).
        if (s.hooks.has_runtime_create_hooks()) {
          state::ContainerState hs;
          hs.id = id_;
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
        try {
          // The verbs plugin's late hook ran before this: it says in the
          // images dir whether the objects came back (it cannot fail CRIU).
          rdma::check_verbs_restore(images_dir);
          // The network sysctls the dump did not carry, set before a
          // single instruction of the container runs (fresh_netns.hpp).
          if (carried) apply_carried_sysctls(restored_, carried->net_sysctls);
          // A paused container stays paused: frozen while CRIU still holds
          // its tasks (as CRIU restores a v1 freezer state), so not one
          // instruction of theirs runs when CRIU lets them go.
          if (paused_again) cg_->freeze();
          held = true;
          if (hold) {
            in_hold_ = true;
            ScopeGuard out_of_hold([&] { in_hold_ = false; });
            hold();
          }
        } catch (...) {
          // CRIU 3.17 lets the tasks go even when this notification fails
          // (cr-restore.c only logs a pre-resume script's failure). Frozen
          // first, not one instruction of theirs runs before release()
          // kills them: a copy that ran here, however briefly, would act
          // beside the source the rollback resumes (a migration whose
          // Commit never came).
          freeze_before_release();
          throw;
        }
      } else if (n.script == "post-resume" && held && restored_ > 0) {
        // The tasks run (CRIU wrote its stats just before): CRIU's exit
        // and the clean-up below are not waited for by whoever waits for
        // the container to run.
        become_ours(restored_);
      } else if (n.script == "orphan-pts-master" && n.fd) {
        // CRIU made a new pty in the container's devpts for the slave the
        // tasks had; its master goes to the console socket as on create.
        if (r_.console_socket.empty()) {
          log::warn("restore: the container has a terminal but no --console-socket was "
                    "given; its pty master is closed");
        } else {
          linux_::send_console_fd(r_.console_socket, n.fd.get(), pty_name(n.fd.get()));
        }
      }
    };
    std::unique_ptr<StartedRestore> criu = std::move(criu_);
    pid_t pid = 0;
    try {
      pid = criu->run(o, notify);
    } catch (const std::exception& e) {
      if (!done_) throw;
      // After the post-resume notification: the tasks run and are saved.
      log::warn("restore of " + id_ + ": " + e.what() + " after the container resumed; kept");
    }
    criu.reset();
    if (!held) rdma::check_verbs_restore(images_dir);
    if (!held && carried) apply_carried_sysctls(pid > 0 ? pid : restored_, carried->net_sysctls);
    if (!held && paused_again) cg_->freeze();
    if (!held && hold) hold();
    if (pid <= 0) pid = restored_;
    if (!done_) become_ours(pid);
    // CRIU bound what it needed into the container: crx's own mounts go.
    tmpfs_.reset();
    yard_.reset();
    root_.reset();
    joined_namespaces_.clear();
    work_.reset();
    guard_.reset();  // disarmed: the container is a crx container now
    // Its state dir's lock goes too: from here on crx commands (the
    // receiver's own, resuming the container's QPs) open it as any other.
    dir_.reset();
    cg_.reset();
    if (resumed_error) std::rethrow_exception(resumed_error);
    return pid;
  } catch (...) {
    if (!done_) release();
    throw;
  }
}

void PreparedRestore::set_net_sysctls(const NetSysctls& sysctls) {
  if (restored_ <= 0)
    throw Error("restore of " + id_ + ": no restored tasks to set network sysctls in yet",
                Cause::Invalid);
  apply_net_sysctls(restored_, sysctls);
}

void PreparedRestore::save_state_ahead() {
  if (!in_hold_ || restored_ <= 0)
    throw Error("restore of " + id_ + ": its state can be saved ahead only while run() holds "
                "the restored tasks", Cause::Invalid);
  if (state_ahead_) return;
  write_state(restored_);
  state_ahead_ = true;
}

void PreparedRestore::save_state(pid_t pid) {
  if (!state_ahead_ || pid != restored_) write_state(pid);
  forget_restoring_cgroup(dir_->path());
  write_pid_file(pid_file_, pid);
  done_ = true;
}

void PreparedRestore::write_state(pid_t pid) {
  const CarriedState* carried = carried_.get();
  state::ContainerState st;
  st.id = id_;
  st.bundle = bundle_.dir;
  st.rootfs = bundle_.rootfs;
  st.created = state::now_rfc3339();
  st.pid = pid;
  st.pid_start_time = state::process_start_time(pid);
  st.annotations = carried ? carried->annotations : bundle_.spec.annotations;
  st.owner = carried ? carried->owner : "";
  st.cgroup = cg_->save();
  st.config = bundle_.spec.raw;
  st.systemd_cgroup = g_.systemd_cgroup;
  st.pid_file = pid_file_;
  dir_->save(st);
}

void PreparedRestore::release() noexcept {
  // The waiting (or failed) criu first: nothing can restore into what
  // goes next. Then the tasks it made, crx's mounts, the cgroup, the
  // state dir; the guard last (it covers all of this until here).
  criu_.reset();
  if (cg_) {
    try {
      cg_->kill_all();
    } catch (const std::exception& e) {
      log::warn("restore cleanup: " + std::string(e.what()));
    }
  }
  tmpfs_.reset();
  yard_.reset();
  root_.reset();
  joined_namespaces_.clear();
  work_.reset();
  if (cg_) {
    try {
      cg_->destroy();
    } catch (const std::exception& e) {
      log::warn("restore cleanup: " + std::string(e.what()));
    }
    cg_.reset();
  }
  try {
    if (!dir_ && !state_dir_.empty()) dir_ = reopen_state_dir();  // not locked since prepare
    if (dir_) dir_->remove();
  } catch (const std::exception& e) {
    log::warn("restore cleanup: " + std::string(e.what()));
  }
  dir_.reset();
  guard_.reset();
}

}  // namespace crx::checkpoint
