// One verbs context (an open /dev/infiniband/uverbsN) of a container's
// process, reached through crx's own copy of the process's fd
// (pidfd_getfd): the verbs-ext calls work on any copy of the file, since
// they only use ibv_context::cmd_fd.
#pragma once
#include <sys/types.h>

#include <cstdlib>
#include <memory>
#include <string>

#include "common/unique_fd.hpp"
#include "rdma/mr_writes.hpp"
#include "rdma/rdma_inventory.hpp"

struct ibv_context;

namespace crx::rdma {

class VerbsContext {
 public:
  VerbsContext(pid_t pid, int target_fd, UniqueFd copy, std::string device)
      : pid_(pid), target_fd_(target_fd), copy_(std::move(copy)), device_(std::move(device)) {}

  pid_t pid() const { return pid_; }
  int target_fd() const { return target_fd_; }  // the fd number in the process
  const std::string& device() const { return device_; }

  // A snapshot of the context's objects without stopping anything and
  // without the rings' contents (ibv_dump_context_alloc, NO_STOP and
  // NO_RINGS: a rank of UCX's has megabytes of them). Throws
  // RdmaError(VerbsCall) with the errno, e.g. EOPNOTSUPP from a stock rxe.
  RdmaInventory inventory() const;
  // ibv_migr_resume_stopped: QPs left Stopped by a dump run again and send
  // their partners the resume message. Returns how many; throws like
  // inventory().
  int resume_stopped() const;
  // ibv_migr_stop_all: every QP not stopped yet stops (as in a dump,
  // without one). Returns how many; throws like inventory().
  int stop_all() const;
  // The write logs of the context's pinned MRs (ibv_migr_mr_writes, of
  // the MRs a snapshot as inventory()'s lists), cleared when `clear`.
  // Throws like inventory(); an MR deregistered meanwhile (ENOENT) is
  // skipped, since the device's lost count tells of its writes.
  ContextWrites mr_writes(bool clear) const;

 private:
  // A snapshot as inventory()'s, for `what` ("inspect": "inspect <name>"
  // in the error).
  struct Look {
    std::unique_ptr<void, decltype(&std::free)> dump;
    size_t length;
  };
  Look look(const std::string& what) const;
  std::string name() const;  // "pid 12 fd 5 (rxe0)"
  // A verbs-ext call on every QP of the context through our copy of its
  // fd; throws RdmaError(VerbsCall) naming `what` and the context.
  int qp_ctl_all(int (*call)(ibv_context*), const std::string& what) const;
  pid_t pid_;
  int target_fd_;
  UniqueFd copy_;
  std::string device_;
};

}  // namespace crx::rdma
