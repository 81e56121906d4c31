#include "checkpoint/container_checkpoint.hpp"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "checkpoint/carried_state.hpp"
#include "checkpoint/image_dirs.hpp"
#include "checkpoint/criu_rpc.hpp"
#include "checkpoint/external_namespaces.hpp"
#include "checkpoint/network_lock.hpp"
#include "checkpoint/outside_terminal.hpp"
#include "checkpoint/prepared_restore.hpp"
#include "checkpoint/recreated_dev.hpp"
#include "checkpoint/recreated_mounts.hpp"
#include "common/error.hpp"
#include "common/fs.hpp"
#include "common/log.hpp"
#include "common/scope_guard.hpp"
#include "container/lifecycle.hpp"
#include "cgroup/cgroup.hpp"
#include "cgroup/paths.hpp"
#include "rdma/container_qps.hpp"
#include "rdma/plugin_stats.hpp"
#include "spec/bundle.hpp"
#include "spec/spec.hpp"
#include "state/store.hpp"

namespace crx::checkpoint {
namespace {

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

// Bind mounts and masked files (/dev/null bound over them) as CRIU external
// mounts. Masked directories (tmpfs) are added for the final dump of a
// frozen container by add_recreated_mounts.
void add_dump_mounts(CommonOptions& o, const spec::Spec& s, pid_t pid) {
  for (const auto& m : s.mounts) {
    if (is_bind_mount(m)) o.ext_mounts.push_back({m.destination, m.destination});
  }
  std::string root = "/proc/" + std::to_string(pid) + "/root";
  for (const auto& p : s.linux.masked_paths) {
    struct stat st{};
    if (::stat((root + p).c_str(), &st) == 0 && S_ISCHR(st.st_mode)) {
      o.ext_mounts.push_back({p, p});
    }
  }
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

}  // namespace

void apply_criu_flags(CommonOptions& o, const CriuFlags& f) {
  o.tcp_established = f.tcp_established;
  o.ext_unix_sk = f.ext_unix_sk;
  o.shell_job = f.shell_job;
  o.file_locks = f.file_locks;
  o.manage_cgroups_mode = f.manage_cgroups_mode;
}

SourceContainer prepare_source(const container::GlobalOptions& g, const std::string& id,
                               const CriuFlags& flags) {
  Loaded l = load(g, id);
  SourceContainer s;
  s.pid = l.st.pid;
  s.freezer_dir = freezer_dir(l.cg);
  s.base.pid = l.st.pid;
  s.base.root = l.st.rootfs;
  apply_criu_flags(s.base, flags);
  add_dump_mounts(s.base, l.spec, l.st.pid);
  add_dump_external_namespaces(s.base, l.spec, l.st.pid);
  s.base.empty_ns = empty_ns_mask(flags.empty_ns);
  s.base.auto_dedup = flags.auto_dedup;
  s.base.orphan_pts_master = l.spec.process.terminal;
  s.base.freeze_cgroup = s.freezer_dir;
  s.base.nftables_network_lock = nftables_lock_for_checkpoint(l.spec, flags.tcp_established);
  s.spec = std::move(l.spec);
  s.state_dir = state::StateDir::open(g.root, id).path();
  // Failing here only means that CRIU packs /dev, as it does for a /dev
  // the container changed.
  try {
    s.expected_dev = expected_dev_tree(s.spec, s.state_dir + "/criu-dev-check");
  } catch (const std::exception& e) {
    log::debug(std::string("checkpoint: /dev not made for the comparison, CRIU dumps it: ") +
               e.what());
  }
  s.paused = l.cg && l.cg->frozen();
  s.state = std::move(l.st);
  return s;
}

ProcessSplit check_outside_processes(const SourceContainer& s, bool kill_exec) {
  ProcessSplit split = container_processes(s.state);
  if (!split.outside.empty() && !kill_exec)
    throw Error(outside_processes_error(s.state.id, split.outside));
  return split;
}

void add_recreated_mounts(DumpOptions& o, const SourceContainer& s, const std::string& images_dir,
                          MountsChoice when) {
  auto mounts = when == MountsChoice::Ahead ? recreated_dump_mounts_ahead(s.spec, s.pid)
                                            : recreated_dump_mounts(s.spec, s.pid, images_dir);
  for (auto& m : mounts) {
    log::debug("checkpoint: " + m.key + " is recreated on restore, not dumped");
    o.ext_mounts.push_back(std::move(m));
  }
  if (auto dev = recreated_dev_mount(s.pid, s.expected_dev)) {
    log::debug("checkpoint: /dev is recreated on restore, not dumped");
    o.ext_mounts.push_back(std::move(*dev));
  }
}

void freeze_container(const SourceContainer& s) {
  // What prepare_source() loaded, not state.json and config.json again:
  // this runs at the start of a migration's frozen window.
  const std::string& id = s.state.id;
  if (!state::process_alive(s.pid, s.state.pid_start_time))
    throw Error("container " + id + " stopped: its init (pid " + std::to_string(s.pid) +
                    ") is gone, nothing to checkpoint",
                Cause::NotFound);
  if (s.state.cgroup.is_null() || s.state.cgroup.empty())
    throw Error("container " + id + " has no cgroup to freeze");
  cgroup::Cgroup::load(s.state.cgroup).freeze();
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
  if (!r.pre_dump) left_out = check_outside_processes(src, r.kill_exec).outside;
  UniqueFd images = open_image_dir(r.image_path, true);
  UniqueFd work = open_image_dir(r.work_path.empty() ? r.image_path : r.work_path, true);
  DumpOptions o = src.base;
  o.images_dir_fd = images.get();
  o.work_dir_fd = work.get();
  o.log_file = r.pre_dump ? "pre-dump.log" : "dump.log";
  o.parent_img = r.parent_path;
  // A pre-dump clears the soft-dirty bits of pinned transparent huge pages,
  // and the NIC's writes set none: the dump of a container with verbs
  // objects must not leave out what it did not see change since its parent
  // (runtime/migrate/README.md). CRIU dumps all of its pages instead.
  if (!r.pre_dump && !r.parent_path.empty() && !rdma::ContainerQps(g).inventory(id).empty()) {
    log::debug("checkpoint: " + id + " has verbs objects: every page is dumped, not only those "
              "changed since " + r.parent_path);
    o.parent_img.clear();
  }
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
    left_out = check_outside_processes(src, r.kill_exec).outside;
    add_recreated_mounts(o, src, r.image_path);
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
  PreparedRestore prepared(g, id, r);
  return prepared.run(r.image_path, r.hold);
}

}  // namespace crx::checkpoint
