// The verbs contexts of a set of processes (a container's): found by
// scanning their fds (verbs_scan.hpp), each held as crx's own copy.
#pragma once
#include <sys/types.h>

#include <string>
#include <vector>

#include "rdma/rdma_inventory.hpp"
#include "rdma/verbs_context.hpp"

namespace crx::rdma {

class ContainerVerbs {
 public:
  // Processes that are gone or close their fd meanwhile are skipped.
  static ContainerVerbs of_processes(const std::vector<pid_t>& pids,
                                     const std::string& sysfs_root = "/sys");

  bool empty() const { return contexts_.empty(); }
  const std::vector<VerbsContext>& contexts() const { return contexts_; }
  // Every context's objects, without stopping anything.
  RdmaInventory inventory() const;
  // Resumes the stopped QPs of every context (all are tried); returns how
  // many QPs were resumed, or throws the first error afterwards.
  int resume_stopped() const;
  // Stops the QPs of every context that are not stopped yet (all are
  // tried); returns how many, or throws the first error afterwards.
  int stop_all() const;
  // Every context's MR write logs (VerbsContext::mr_writes); the first
  // error is thrown.
  std::vector<ContextWrites> mr_writes(bool clear) const;

 private:
  std::vector<VerbsContext> contexts_;
};

}  // namespace crx::rdma
