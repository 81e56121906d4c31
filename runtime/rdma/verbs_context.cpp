#include "rdma/verbs_context.hpp"

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

VerbsContext::Look VerbsContext::look(const std::string& what) const {
  ibv_context ctx{};
  ctx.cmd_fd = copy_.get();
  void* dump = nullptr;
  size_t length = 0;
  int err = ibv_dump_context_alloc(&ctx, nullptr, &dump, &length,
                                   IBV_MIGR_DUMP_NO_STOP | IBV_MIGR_DUMP_NO_RINGS);
  if (err) throw_rdma_errno(RdmaCause::VerbsCall, what + " " + name(), -err);
  return Look{std::unique_ptr<void, decltype(&std::free)>(dump, &std::free), length};
}

RdmaInventory VerbsContext::inventory() const {
  Look l = look("inspect");
  RdmaInventory inv;
  inv.add_dump(device_, l.dump.get(), l.length);
  return inv;
}

ContextWrites VerbsContext::mr_writes(bool clear) const {
  Look l = look("list the MRs of");
  ibv_context ctx{};
  ctx.cmd_fd = copy_.get();
  ContextWrites out;
  out.pid = pid_;
  out.device = device_;
  const rxe_migr_rec_hdr* r = nullptr;
  int err = 0;
  while ((r = ibv_migr_next_record(l.dump.get(), l.length, r, &err))) {
    if (r->type != RXE_MIGR_OBJ_MR) continue;
    if (static_cast<const rxe_migr_mr*>(static_cast<const void*>(r + 1))->flags &
        RXE_MIGR_MR_UNPINNED)
      continue;  // no pages yet, nothing written
    struct ibv_migr_mr_writes w{};
    int e = ibv_migr_mr_writes(&ctx, r->handle, clear ? IBV_MIGR_WRITES_CLEAR : 0, &w);
    if (e == -ENOENT) continue;
    if (e) throw_rdma_errno(RdmaCause::VerbsCall, "read the MR write log of " + name(), -e);
    std::unique_ptr<uint64_t, decltype(&std::free)> bits(w.bits, &std::free);
    // the device's count only grows: the first MR's answer is the
    // smallest, the last one's the largest
    if (out.mrs.empty()) out.lost_min = w.lost;
    out.lost_max = w.lost;
    out.context = w.context;
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
