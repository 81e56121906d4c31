#include "rdma/container_qps.hpp"

#include "cgroup/cgroup.hpp"
#include "rdma/container_verbs.hpp"
#include "state/store.hpp"

namespace crx::rdma {

std::vector<pid_t> ContainerQps::pids(const std::string& id) {
  if (auto known = cgroups_.find(id); known != cgroups_.end())
    return cgroup::Cgroup::load(known->second).pids();
  auto st = state::StateDir::open(g_.root, id).load();
  if (st.cgroup.is_null() || st.cgroup.empty()) return st.pid > 0 ? std::vector<pid_t>{st.pid} : std::vector<pid_t>{};
  cgroups_.emplace(id, st.cgroup);
  return cgroup::Cgroup::load(st.cgroup).pids();
}

int ContainerQps::resume_stopped(const std::string& id) {
  return ContainerVerbs::of_processes(pids(id)).resume_stopped();
}

int ContainerQps::stop_all(const std::string& id) {
  return ContainerVerbs::of_processes(pids(id)).stop_all();
}

RdmaInventory ContainerQps::inventory(const std::string& id) {
  return ContainerVerbs::of_processes(pids(id)).inventory();
}

}  // namespace crx::rdma
