// One container's cgroup, on a pure cgroup v2 system, on the hybrid layout
// (v1 controllers under /sys/fs/cgroup/<ctrl> plus an empty-ish cgroup2 at
// /sys/fs/cgroup/unified) and on pure v1.
//
// The cgroup outlives the crx process that made it: `crx create` calls
// create() + add_process() and stores save() in state.json; later commands
// load() it. Errors are crx::Error lines naming the file and the value:
//   "cgroup: write 10 to /sys/fs/cgroup/memory/x/memory.limit_in_bytes: Device or resource busy"
#pragma once
#include <sys/types.h>

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/unique_fd.hpp"
#include "spec/spec.hpp"

namespace crx::cgroup {

enum class Layout {
  V2,      // /sys/fs/cgroup is cgroup2
  Hybrid,  // v1 controllers + cgroup2 at /sys/fs/cgroup/unified
  V1,      // v1 controllers only
};
// By statfs magic, as runc does (CGROUP2_SUPER_MAGIC / TMPFS_MAGIC).
Layout detect_layout(const std::string& root = "/sys/fs/cgroup");
const char* to_string(Layout layout);

// The devices every container may use whatever the spec says (runc's list:
// mknod of any c/b device, null, zero, full, random, urandom, tty,
// ptmx, /dev/pts/*), appended after the spec's own rules.
std::vector<spec::DeviceRule> default_device_rules();
// linux.resources with the device rules runc derives: the spec's rules, then
// an allow rule for each linux.devices entry, then default_device_rules().
spec::Resources effective_resources(const spec::Linux& linux);

// A pollable source of OOM-kill events (v2: inotify on memory.events,
// v1: eventfd registered on memory.oom_control). Poll fd() for POLLIN, then
// call consume(): it returns how many OOM kills happened since the last call.
class OomEvents {
 public:
  int fd() const { return fd_.get(); }
  uint64_t consume();

 private:
  friend class Cgroup;
  UniqueFd fd_;
  UniqueFd watched_;    // v1: the memory.oom_control fd registered with the eventfd
  bool is_eventfd_ = false;
  std::string counter_file_;  // memory.events (v2) or memory.oom_control (v1)
  uint64_t last_ = 0;
};

class Cgroup {
 public:
  // cgroups_path as in config.json: absolute "/a/b" is taken from each
  // hierarchy's root; relative "a/b" goes below crx's own cgroup (v1) or
  // below its parent (v2), as runc does; empty means relative "<id>".
  // With systemd, the "slice:prefix:name" form (error when systemd is not
  // running). mkdirs, then applies res (may be null). On error nothing is
  // left behind.
  static Cgroup create(const std::string& cgroups_path, const std::string& id, bool systemd,
                       const spec::Resources* res);
  // Same from a spec: cgroupsPath + effective_resources(linux).
  static Cgroup create(const spec::Linux& linux, const std::string& id, bool systemd);
  // create() in two steps, so that the directories can be recorded in
  // state.json before any exists (a `crx create` killed half way is then
  // still cleaned up by `delete --force`): plan() only works out the
  // directories, make() mkdirs and applies res; on error make() removes
  // what it made. Rootless (euid != 0) without limits in res and without
  // write access: make() leaves the cgroup empty, as runc does.
  static Cgroup plan(const std::string& cgroups_path, const std::string& id, bool systemd);
  void make(const spec::Resources* res);
  static Cgroup load(const nlohmann::json& saved);  // from state.json
  nlohmann::json save() const;                      // for state.json

  Layout layout() const { return layout_; }
  // Puts pid into every hierarchy of this cgroup. On v1 the kernel's first
  // cgroup.procs write takes its global threadgroup lock for writing, which
  // waits for an RCU grace period (~10 ms): the two calls below avoid it.
  void add_process(pid_t pid) const;
  // The caller, single-threaded, joins every v1 hierarchy by writing "0" to
  // its tasks file: moving only the calling thread needs no global lock,
  // and for a single-threaded process the thread is the whole process.
  void join_v1_as_single_thread() const;
  // O_PATH fd of the cgroup2 directory (pure v2 or hybrid's unified one) for
  // clone3(CLONE_INTO_CGROUP); an empty fd when there is none.
  UniqueFd open_unified_dir() const;
  // Puts pid into the cgroup2 directory only (when clone3 could not).
  void add_process_to_unified(pid_t pid) const;
  // Writes the limits; also used by `update`. An empty device list leaves the
  // device rules as they are.
  void apply(const spec::Resources& res) const;

  // v1 freezer / v2 cgroup.freeze; both wait until the kernel says FROZEN.
  void freeze() const;
  void thaw() const;
  bool frozen() const;

  std::vector<pid_t> pids() const;  // every process in the cgroup (ps, kill --all)
  // Whether a cgroup was made below this one in any hierarchy (the
  // container's own). Error with the errno when a directory cannot be read.
  bool has_children() const;
  // SIGKILL to every process, then a thaw when there were some and the
  // cgroup has a freezer: a frozen task dies only once thawed (v1; v2 kills
  // frozen tasks at once), and not one more instruction of them runs. For
  // kill --all, delete --force, a failed migration and the rollbacks of
  // create and restore.
  void kill_all() const;
  // The "data" object of runc `events --stats` (cpu, memory, pids, blkio, hugetlb).
  nlohmann::json stats() const;
  uint64_t oom_kill_count() const;  // OOM kills so far (0 without memory controller)
  OomEvents oom_events() const;

  // rmdir of every directory this cgroup made (nested sub-cgroups first),
  // retrying briefly while exiting tasks leave. Idempotent. Throws if a
  // directory still holds processes after the retries.
  void destroy();

  // Directory of the hierarchy that holds `controller` ("memory", "cpu",
  // "name=systemd", "unified" for the cgroup2 directory); "" if none. On V2
  // every controller maps to the one directory.
  std::string path_for(const std::string& controller) const;
  const std::map<std::string, std::string>& dirs() const { return dirs_; }

 private:
  Layout layout_ = Layout::V2;
  std::string path_;                          // cleaned cgroups path (inner)
  std::map<std::string, std::string> dirs_;   // controller -> directory
  std::vector<std::string> created_;          // directories we made, parents first
};

}  // namespace crx::cgroup
