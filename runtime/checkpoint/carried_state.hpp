// What a crx container is beyond its processes, carried next to the CRIU
// images (crx-container.json in the images dir) so that `crx restore` and
// the destination of `crx migrate` make the same container again: the
// resources as `crx update` left them (the bundle's config.json still has
// the ones from create), the annotations and owner, the pid file the
// creator named, whether it was paused, the network sysctls that a new
// namespace would not have and CRIU does not carry (fresh_netns.hpp), and
// whether the network namespace is to be made anew on restore.
// CRIU carries none of these: it
// restores into the cgroup crx makes (cgroup properties are not restored
// into an existing cgroup in its default mode) and a cgroup v2 freezer
// state not at all.
#pragma once
#include <map>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "checkpoint/uts_ipc_anew.hpp"
#include "state/store.hpp"

namespace crx::checkpoint {

inline constexpr const char* kCarriedStateFile = "crx-container.json";

struct CarriedState {
  nlohmann::json resources;  // the saved config's linux.resources (null: none)
  std::map<std::string, std::string> annotations;
  std::string owner;
  std::string pid_file;      // absolute, "" = none
  bool paused = false;
  // Path under /proc/sys -> value: set in the restored container's network
  // namespace before it resumes (empty: none; omitted from the JSON).
  std::map<std::string, std::string> net_sysctls;
  // The container's network namespace is not in the CRIU images: it was a
  // new one nobody configured, and CRIU dumped from inside it
  // (DumpOptions::criu_netns_fd). The restore gives the tasks a new one
  // (RestoreOptions::join_netns). Omitted from the JSON when false.
  bool new_netns_outside_images = false;
  // The container's UTS and IPC namespaces are not in the CRIU images:
  // CRIU dumped from inside them, and the restore makes new ones holding
  // this (uts_ipc_anew.hpp). Omitted from the JSON when nullopt.
  std::optional<UtsIpcContent> uts_ipc_outside_images;

  nlohmann::json to_json() const;
  // Throws crx::Error naming the field when it is malformed.
  static CarriedState from_json(const nlohmann::json& j);
};

CarriedState carried_state_of(const state::ContainerState& st, bool paused);
// Into images_dir (a file CRIU does not know and ignores).
void write_carried_state(const std::string& images_dir, const CarriedState& c);
// nullopt when the images carry none (made by an older crx or by runc).
std::optional<CarriedState> read_carried_state(const std::string& images_dir);

// The config with linux.resources replaced by c.resources (when set).
nlohmann::json config_with_resources(nlohmann::json config, const CarriedState& c);

// Whether c carries resources other than config's linux.resources (`crx
// update` changed them): only then does a restore apply them again over
// the bundle's.
bool carries_other_resources(const nlohmann::json& config, const CarriedState& c);

}  // namespace crx::checkpoint
