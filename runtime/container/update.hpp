// `crx update`: new cgroup limits for a running container, from runc's
// flags or a LinuxResources JSON (--resources file|-). Applied with
// Cgroup::apply and merged into the config saved in state.json.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "container/create.hpp"

namespace crx::container {

// runc's update flags, each optional (unset = unchanged).
struct UpdateFlags {
  std::optional<std::string> memory, memory_swap, memory_reservation, kernel_memory, kernel_memory_tcp;
  std::optional<uint64_t> cpu_shares, cpu_period, cpu_rt_period;
  std::optional<int64_t> cpu_quota, cpu_rt_runtime, pids_limit;
  std::optional<std::string> cpuset_cpus, cpuset_mems;
  std::optional<uint16_t> blkio_weight;
};

// "512m", "1G", "1048576", "-1" -> bytes (binary units, as docker's
// RAMInBytes). Throws crx::Error for anything else.
int64_t parse_memory_size(const std::string& text);

// The LinuxResources JSON the flags describe (only the given fields).
nlohmann::json resources_json_from_flags(const UpdateFlags& f);

// Applies `resources` (a LinuxResources JSON object) to container id.
// "container not running" when it has stopped.
void update_container(const GlobalOptions& g, const std::string& id, const nlohmann::json& resources);

}  // namespace crx::container
