// What a migration moves, listed by the sender before anything is frozen
// and put in the manifest: the processes of the init's tree (pid and
// command), the bind mounts (host paths the destination must have), the
// namespaces joined by path, the memory in use and whether the container
// is paused. The receiver checks what it needs before it accepts (bind
// sources, devices, namespace paths: destination_checks.hpp, from the same
// config.json); both reports show it.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "checkpoint/container_checkpoint.hpp"

namespace crx::migrate {

struct Inventory {
  std::vector<checkpoint::OutsideProcess> processes;            // pid, command
  std::vector<std::pair<std::string, std::string>> bind_mounts;  // destination, host source
  std::vector<std::pair<std::string, std::string>> namespaces;   // type, path
  uint64_t memory_bytes = 0;
  bool paused = false;

  nlohmann::json to_json() const;
  // Throws crx::Error naming what is malformed.
  static Inventory from_json(const nlohmann::json& j);
  // One line: "3 processes (1 sh -c ..., ...), bind mounts /out, ...".
  std::string summary() const;
};

Inventory take_inventory(const checkpoint::SourceContainer& s);

}  // namespace crx::migrate
