#include "rdma/verbs_context.hpp"

#include <algorithm>
#include <cerrno>
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

ContextWrites VerbsContext::mr_writes(bool clear) const {
  ibv_context ctx{};
  ctx.cmd_fd = copy_.get();
  void* dump = nullptr;
  size_t length = 0;
  int err = ibv_dump_context_alloc(&ctx, nullptr, &dump, &length,
                                   IBV_MIGR_DUMP_NO_STOP | IBV_MIGR_DUMP_NO_RINGS);
  if (err) throw_rdma_errno(RdmaCause::VerbsCall, "list the MRs of " + name(), -err);
  std::unique_ptr<void, decltype(&std::free)> owned(dump, &std::free);
  ContextWrites out;
  out.pid = pid_;
  out.device = device_;
  const rxe_migr_rec_hdr* r = nullptr;
  while ((r = ibv_migr_next_record(dump, length, r, &err))) {
    if (r->type != RXE_MIGR_OBJ_MR) continue;
    if (static_cast<const rxe_migr_mr*>(static_cast<const void*>(r + 1))->flags &
        RXE_MIGR_MR_UNPINNED)
      continue;  // no pages yet, nothing written
    struct ibv_migr_mr_writes w{};
    int e = ibv_migr_mr_writes(&ctx, r->handle, clear ? IBV_MIGR_WRITES_CLEAR : 0, &w);
    if (e == -ENOENT) continue;
    if (e) throw_rdma_errno(RdmaCause::VerbsCall, "read the MR write log of " + name(), -e);
    std::unique_ptr<uint64_t, decltype(&std::free)> bits(w.bits, &std::free);
    out.context = w.context;
    out.lost = std::max(out.lost, w.lost);
    MrWrites mr;
    mr.addr = w.addr;
    mr.pages = w.pages;
    mr.bits.assign(w.bits, w.bits + (w.pages + 63) / 64);
    out.mrs.push_back(std::move(mr));
  }
  if (err) throw_rdma_errno(RdmaCause::VerbsCall, "malformed snapshot of " + name(), -err);
  return out;
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
