// The real StoppedQps: a crx container's processes (its cgroup's pids,
// from its state) and their verbs contexts.
#pragma once
#include <sys/types.h>

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "container/create.hpp"
#include "rdma/rdma_inventory.hpp"
#include "rdma/stopped_qps.hpp"

namespace crx::rdma {

class ContainerQps : public StoppedQps {
 public:
  explicit ContainerQps(container::GlobalOptions g) : g_(std::move(g)) {}
  int resume_stopped(const std::string& container_id) override;
  int stop_all(const std::string& container_id) override;
  // The container's verbs objects, nothing stopped (crx migrate's preflight).
  RdmaInventory inventory(const std::string& container_id);

 private:
  std::vector<pid_t> pids(const std::string& container_id);
  container::GlobalOptions g_;
  // Each container's cgroup as its state records it, read once: it stays
  // the container's for its life, and loading state.json again at a
  // migration's freeze cost 13 ms of the frozen window in a TCG guest.
  std::map<std::string, nlohmann::json> cgroups_;
};

}  // namespace crx::rdma
