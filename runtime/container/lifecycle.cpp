#include "container/lifecycle.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <optional>
#include <thread>

#include "checkpoint/restore_guard.hpp"
#include "common/error.hpp"
#include "common/fs.hpp"
#include "common/log.hpp"
#include "container/hooks_runner.hpp"
#include "cgroup/cgroup.hpp"
#include "linux/paths.hpp"
#include "spec/spec.hpp"

namespace crx::container {

namespace {

std::optional<cgroup::Cgroup> load_cgroup(const state::ContainerState& st) {
  if (st.cgroup.is_null()) return std::nullopt;
  try {
    return cgroup::Cgroup::load(st.cgroup);
  } catch (const std::exception& e) {
    log::warn(std::string("container ") + st.id + ": " + e.what());
    return std::nullopt;
  }
}

std::optional<spec::Spec> saved_spec(const state::ContainerState& st) {
  if (!st.config.is_object()) return std::nullopt;
  try {
    return spec::parse_spec(st.config, "state.json config");
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

spec::Hooks saved_hooks(const state::ContainerState& st) {
  auto s = saved_spec(st);
  return s ? s->hooks : spec::Hooks{};
}

// A container without a mount namespace had its mounts made in ours, below
// its rootfs (as runc does, which leaves them there): they go with it, last
// made first. A destination that is no mount point (any more) is skipped.
void detach_mounts_made_outside(const state::ContainerState& st) {
  auto s = saved_spec(st);
  if (!s || s->linux.find_namespace("mount") || st.rootfs.empty()) return;
  for (auto m = s->mounts.rbegin(); m != s->mounts.rend(); ++m) {
    std::string path;
    try {
      path = paths::secure_join(st.rootfs, m->destination);
    } catch (const Error& e) {
      log::warn("container " + st.id + ": " + e.what());
      continue;
    }
    if (::umount2(path.c_str(), MNT_DETACH | UMOUNT_NOFOLLOW) != 0 && errno != EINVAL && errno != ENOENT)
      log::warn("container " + st.id + ": unmount " + path + ": " + std::strerror(errno));
  }
}

void wait_gone(pid_t pid, uint64_t start_time) {
  for (int i = 0; i < 2000 && state::process_alive(pid, start_time); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(i < 50 ? 1 : 5));
}

}  // namespace

state::Status current_status(const state::StateDir& dir, const state::ContainerState& st) {
  if (!state::process_alive(st.pid, st.pid_start_time)) return state::Status::Stopped;
  if (dir.fifo_exists()) return state::Status::Created;
  if (auto cg = load_cgroup(st); cg && cg->frozen()) return state::Status::Paused;
  return state::Status::Running;
}

void start_container(const GlobalOptions& g, const std::string& id) {
  auto dir = state::StateDir::open(g.root, id);
  auto st = dir.load();
  auto status = current_status(dir, st);
  if (status == state::Status::Stopped) throw Error("cannot start a container that has stopped");
  if (status != state::Status::Created)
    throw Error(std::string("cannot start an already running container (status ") + state::to_string(status) + ")");

  UniqueFd fifo(::open(dir.fifo_path().c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC));
  if (!fifo) throw_errno("open " + dir.fifo_path());
  for (;;) {
    pollfd p{fifo.get(), POLLIN, 0};
    int r = ::poll(&p, 1, 100);
    if (r < 0 && errno != EINTR) throw_errno("poll exec fifo");
    if (r > 0 && (p.revents & POLLIN)) {
      char c;
      if (::read(fifo.get(), &c, 1) == 1) break;
    }
    if (!state::process_alive(st.pid, st.pid_start_time))
      throw Error("container " + id + " init exited before start");
  }
  ::unlink(dir.fifo_path().c_str());
  std::string state_json = state::oci_state_json(st, state::Status::Running).dump();
  run_hooks_warn(saved_hooks(st).poststart, "poststart", state_json);
}

int parse_signal(const std::string& text) {
  if (text.empty()) throw Error("invalid signal: empty");
  if (std::all_of(text.begin(), text.end(), ::isdigit)) {
    int n = std::stoi(text);
    if (n <= 0 || n >= NSIG) throw Error("invalid signal " + text);
    return n;
  }
  std::string name = text;
  for (auto& c : name) c = static_cast<char>(::toupper(c));
  if (name.rfind("SIG", 0) == 0) name = name.substr(3);
  for (int i = 1; i < NSIG; ++i) {
    const char* abbrev = ::sigabbrev_np(i);
    if (abbrev && name == abbrev) return i;
  }
  if (name.rfind("RTMIN", 0) == 0 || name.rfind("RTMAX", 0) == 0) {
    int off = name.size() > 5 ? std::stoi(name.substr(5)) : 0;
    int n = name.rfind("RTMIN", 0) == 0 ? SIGRTMIN + off : SIGRTMAX + off;
    if (n >= SIGRTMIN && n <= SIGRTMAX) return n;
  }
  throw Error("invalid signal \"" + text + "\"");
}

void kill_container(const GlobalOptions& g, const std::string& id, int signal, bool all) {
  auto dir = state::StateDir::open(g.root, id);
  auto st = dir.load();
  auto status = current_status(dir, st);
  if (status == state::Status::Stopped && !all) throw Error("container " + id + " not running");
  if (all) {
    auto cg = load_cgroup(st);
    if (!cg) throw Error("container " + id + ": no cgroup to signal --all");
    if (signal == SIGKILL) {
      cg->kill_all();
    } else {
      for (pid_t p : cg->pids()) ::kill(p, signal);
    }
    return;
  }
  if (::kill(st.pid, signal) != 0) {
    if (errno == ESRCH) throw Error("container " + id + " not running: no such process");
    throw_errno("kill container " + id);
  }
}

namespace {

// As runc 1.1.5: `delete --force` of a container that does not exist
// succeeds (containerd's shim cleans up after a task that way).
std::optional<state::StateDir> open_for_delete(const GlobalOptions& g, const std::string& id,
                                               bool force) {
  try {
    return state::StateDir::open(g.root, id);
  } catch (const Error& e) {
    if (force && e.sys_errno() == ENOENT) return std::nullopt;
    throw;
  }
}

// A restore killed before it saved state.json leaves the cgroup it made
// recorded in the state dir (checkpoint/restore_guard.hpp), and in it the
// tasks CRIU had restored so far, stopped or frozen: kill them, remove the
// cgroup, then the record. A cgroup that cannot be removed throws and keeps
// the record, so that another delete --force finds it again.
void remove_restoring_cgroup(const state::StateDir& dir) {
  auto saved = checkpoint::restoring_cgroup(dir.path());
  if (!saved) return;
  std::optional<cgroup::Cgroup> cg;
  try {
    cg = cgroup::Cgroup::load(nlohmann::json::parse(*saved));
  } catch (const std::exception& e) {
    log::warn("container " + dir.id() + ": the cgroup record of its restore is unreadable (" +
              dir.path() + "/restore-cgroup.json): " + e.what());
    return;
  }
  checkpoint::RestoreLeftovers leftovers;
  for (const auto& [ctrl, cdir] : cg->dirs()) leftovers.cgroup_dirs.push_back(cdir);
  // No title: the images dir is not known here; a task CRIU had forked but
  // not yet moved into the cgroup is the next `crx receive`'s to find.
  checkpoint::kill_restore_leftovers(leftovers);
  cg->destroy();
  checkpoint::forget_restoring_cgroup(dir.path());
}

}  // namespace

void delete_container(const GlobalOptions& g, const std::string& id, bool force) {
  auto opened = open_for_delete(g, id, force);
  if (!opened) return;
  auto& dir = *opened;
  state::ContainerState st;
  bool have_state = dir.has_state();
  if (have_state) {
    try {
      st = dir.load();
    } catch (const Error&) {
      if (!force) throw;
      have_state = false;
    }
  }
  if (!have_state) {
    if (!force) throw Error("container " + id + " does not exist (incomplete state; use delete --force)");
    remove_restoring_cgroup(dir);
    dir.remove();
    return;
  }
  auto status = current_status(dir, st);
  auto cg = load_cgroup(st);
  if (status == state::Status::Running || status == state::Status::Paused) {
    if (!force)
      throw Error("cannot delete container " + id + " that is not stopped: " + state::to_string(status));
  }
  if (status != state::Status::Stopped || force) {
    if (st.pid > 0 && state::process_alive(st.pid, st.pid_start_time)) ::kill(st.pid, SIGKILL);
    if (cg) cg->kill_all();
    wait_gone(st.pid, st.pid_start_time);
  }
  detach_mounts_made_outside(st);
  if (cg) cg->destroy();
  std::string state_json = state::oci_state_json(st, state::Status::Stopped).dump();
  dir.remove();
  run_hooks_warn(saved_hooks(st).poststop, "poststop", state_json);
}

nlohmann::json container_state(const GlobalOptions& g, const std::string& id) {
  auto dir = state::StateDir::open(g.root, id);
  auto st = dir.load();
  return state::oci_state_json(st, current_status(dir, st));
}

std::vector<nlohmann::json> list_containers(const GlobalOptions& g) {
  std::vector<nlohmann::json> out;
  for (const auto& id : state::list_ids(g.root)) {
    try {
      out.push_back(container_state(g, id));
    } catch (const Error& e) {
      // Deleted meanwhile: gone, nothing to say. Otherwise skipped with a
      // warning, as runc's "load container ...": a state dir without
      // state.json (a create or a receiver's restore that died half way)
      // still blocks its id, and the warning says how to remove it.
      if (e.cause() == Cause::NotFound && !path_exists(g.root + "/" + id)) continue;
      log::warn("list: skipping " + id + ": " + e.what());
    } catch (const std::exception& e) {
      log::warn("list: skipping " + id + ": " + e.what());
    }
  }
  return out;
}

}  // namespace crx::container
