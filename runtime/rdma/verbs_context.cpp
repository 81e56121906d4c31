#include "rdma/verbs_context.hpp"

#include <cstdlib>
#include <memory>

#include "ibv_migr.h"
#include "rdma/rdma_error.hpp"

namespace crx::rdma {

std::string VerbsContext::name() const {
  return "verbs context of pid " + std::to_string(pid_) + " fd " + std::to_string(target_fd_) +
         " (" + device_ + ")";
}

RdmaInventory VerbsContext::inventory() const {
  ibv_context ctx{};
  ctx.cmd_fd = copy_.get();
  void* dump = nullptr;
  size_t length = 0;
  int err = ibv_dump_context_alloc(&ctx, nullptr, &dump, &length,
                                   IBV_MIGR_DUMP_NO_STOP | IBV_MIGR_DUMP_NO_RINGS);
  if (err) throw_rdma_errno(RdmaCause::VerbsCall, "inspect " + name(), -err);
  std::unique_ptr<void, decltype(&std::free)> owned(dump, &std::free);
  RdmaInventory inv;
  inv.add_dump(device_, dump, length);
  return inv;
}

int VerbsContext::qp_ctl_all(int (*call)(ibv_context*), const std::string& what) const {
  ibv_context ctx{};
  ctx.cmd_fd = copy_.get();
  int n = call(&ctx);
  if (n < 0) throw_rdma_errno(RdmaCause::VerbsCall, what + " of " + name(), -n);
  return n;
}

int VerbsContext::resume_stopped() const {
  return qp_ctl_all(ibv_migr_resume_stopped, "resume the stopped QPs");
}

int VerbsContext::stop_all() const { return qp_ctl_all(ibv_migr_stop_all, "stop the QPs"); }

}  // namespace crx::rdma
