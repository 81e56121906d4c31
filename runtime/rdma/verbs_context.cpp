#include "rdma/verbs_context.hpp"

#include <vector>

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
  std::vector<unsigned char> buf(64 * 1024);
  for (;;) {
    int count = 0;
    int n = ibv_dump_context_flags(&ctx, &count, buf.data(), buf.size(), IBV_MIGR_DUMP_NO_STOP);
    if (n < 0) throw_rdma_errno(RdmaCause::VerbsCall, "inspect " + name(), -n);
    if (static_cast<size_t>(n) <= buf.size()) {
      RdmaInventory inv;
      inv.add_dump(device_, buf.data(), static_cast<size_t>(n));
      return inv;
    }
    buf.resize(static_cast<size_t>(n));
  }
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
