// Container state under the root dir (default /run/crx):
//   <root>/<id>/state.json  written atomically
//   <root>/<id>/exec.fifo   exists between create and start
// Every command holds an flock on <root>/<id> while it works, so concurrent
// commands on one container are serialized.
#pragma once
#include <sys/types.h>

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/unique_fd.hpp"

namespace crx::state {

enum class Status { Creating, Created, Running, Paused, Stopped };
const char* to_string(Status s);

struct ContainerState {
  std::string id;
  std::string bundle;
  std::string rootfs;
  std::string created;  // RFC 3339 with nanoseconds
  std::string owner;
  pid_t pid = 0;
  uint64_t pid_start_time = 0;  // /proc/<pid>/stat field 22, guards against pid reuse
  std::map<std::string, std::string> annotations;
  nlohmann::json cgroup;     // cgroup::Cgroup::save()
  nlohmann::json config;     // the spec as created (hooks, namespaces for exec, ...)
  bool systemd_cgroup = false;
  bool created_with_userns = false;
  // The pid file the creator named (absolute; "" = none): a migration
  // writes the restored init's pid there on the destination.
  std::string pid_file;

  nlohmann::json to_json() const;
  // Throws Error when j is no object or a field has the wrong type.
  static ContainerState from_json(const nlohmann::json& j);
};

// The OCI state object `crx state` prints (and hooks receive on stdin).
nlohmann::json oci_state_json(const ContainerState& st, Status status);

// Time now as RFC 3339 with nanoseconds, UTC.
std::string now_rfc3339();
// Field 22 of /proc/<pid>/stat, or 0 when the process is gone.
uint64_t process_start_time(pid_t pid);
// True when pid is alive (not a zombie) and started at start_time.
bool process_alive(pid_t pid, uint64_t start_time);

class StateDir {
 public:
  // Creates <root>/<id> exclusively and locks it; "container with id X already exists".
  static StateDir create(const std::string& root, const std::string& id);
  // Opens and locks an existing container; "container X does not exist".
  static StateDir open(const std::string& root, const std::string& id);

  StateDir(StateDir&&) = default;
  StateDir& operator=(StateDir&&) = default;

  const std::string& path() const { return path_; }
  const std::string& id() const { return id_; }
  std::string fifo_path() const { return path_ + "/exec.fifo"; }
  int lock_fd() const { return lock_.get(); }

  bool has_state() const;
  ContainerState load() const;
  void save(const ContainerState& st) const;
  bool fifo_exists() const;
  // Removes the whole directory (the lock goes with it).
  void remove();

 private:
  StateDir(std::string path, std::string id, UniqueFd lock)
      : path_(std::move(path)), id_(std::move(id)), lock_(std::move(lock)) {}
  std::string path_;
  std::string id_;
  UniqueFd lock_;
};

// Detaches (MNT_DETACH) every mount at or below dir, deepest first: what a
// killed restore left there (CRIU's rootfs bind mount and cgroup yard)
// before the tree is removed.
void detach_mounts_below(const std::string& dir);

// Ids of all containers under root (directories with a state.json), sorted.
std::vector<std::string> list_ids(const std::string& root);

}  // namespace crx::state
