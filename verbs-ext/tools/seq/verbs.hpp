// RAII owners of the libibverbs objects crx-verbs-seq uses, and the QP state
// transitions of an RC connection. Plain libibverbs only: nothing here knows
// about the patched driver.
#pragma once
#include <infiniband/verbs.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace crx::verbs_seq {

template <typename T, int (*Destroy)(T*)>
struct VerbsDeleter {
  void operator()(T* p) const {
    if (p) Destroy(p);
  }
};
using ContextPtr = std::unique_ptr<ibv_context, VerbsDeleter<ibv_context, ibv_close_device>>;
using PdPtr = std::unique_ptr<ibv_pd, VerbsDeleter<ibv_pd, ibv_dealloc_pd>>;
using ChannelPtr =
    std::unique_ptr<ibv_comp_channel, VerbsDeleter<ibv_comp_channel, ibv_destroy_comp_channel>>;
using CqPtr = std::unique_ptr<ibv_cq, VerbsDeleter<ibv_cq, ibv_destroy_cq>>;
using SrqPtr = std::unique_ptr<ibv_srq, VerbsDeleter<ibv_srq, ibv_destroy_srq>>;
using QpPtr = std::unique_ptr<ibv_qp, VerbsDeleter<ibv_qp, ibv_destroy_qp>>;
using MrPtr = std::unique_ptr<ibv_mr, VerbsDeleter<ibv_mr, ibv_dereg_mr>>;

// What the peer needs to reach one of our QPs.
struct QpEndpoint {
  uint32_t qpn = 0;
  uint32_t psn = 0;
};

// Our side of the connection as sent to the peer.
struct LocalInfo {
  uint16_t lid = 0;
  ibv_gid gid{};
  ibv_mtu mtu = IBV_MTU_1024;
};

ContextPtr open_device(const std::string& name);
// Chooses the GID index: the requested one, or the first IPv4-mapped GID.
int pick_gid_index(ibv_context* ctx, int port, int requested);
LocalInfo query_local(ibv_context* ctx, int port, int gid_index);

// Private anonymous memory with every byte written (fill), so that each page
// is really there (a migration has to move it); unmapped on destruction.
// huge: on 2 MiB boundaries with MADV_HUGEPAGE, before the first write;
// otherwise MADV_NOHUGEPAGE, never on transparent huge pages.
class Memory {
 public:
  Memory(size_t bytes, unsigned char fill, bool huge = false);
  ~Memory();
  Memory(const Memory&) = delete;
  Memory& operator=(const Memory&) = delete;
  char* data() const { return data_; }

 private:
  char* map_ = nullptr;  // what mmap gave (more than bytes_ when aligned)
  size_t map_bytes_ = 0;
  char* data_ = nullptr;
  size_t bytes_ = 0;
};

// Page-aligned memory registered for local access (and the extra access
// flags given).
class Buffer {
 public:
  Buffer(ibv_pd* pd, size_t bytes, unsigned char fill = 0, int extra_access = 0,
         bool huge = false);
  ~Buffer();
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  char* data() const { return mem_.data(); }
  uint32_t lkey() const { return mr_->lkey; }
  uint32_t rkey() const { return mr_->rkey; }

 private:
  Memory mem_;
  MrPtr mr_;
};

struct QpSettings {
  int port = 1;
  int gid_index = 0;
  int timeout = 14;
  int retry_cnt = 7;
  int rnr_retry = 7;
  int access = 0;  // the QP's remote access flags (IBV_ACCESS_REMOTE_*)
};

void qp_to_init(ibv_qp* qp, const QpSettings& s);
void qp_to_rtr(ibv_qp* qp, const QpSettings& s, const LocalInfo& remote, ibv_mtu mtu,
               const QpEndpoint& peer);
void qp_to_rts(ibv_qp* qp, const QpSettings& s, uint32_t my_psn);

// Waits for completions on one CQ, either on its completion channel (default,
// leaves the CPU to the guest) or by polling.
class CompletionQueue {
 public:
  CompletionQueue(ibv_context* ctx, int entries, bool busy_poll);
  ibv_cq* get() const { return cq_.get(); }
  // Fills wc with up to max entries; waits at most timeout_ms (-1 forever)
  // when none is ready. Returns the number filled (0 on time-out).
  int wait(ibv_wc* wc, int max, int timeout_ms);
  ~CompletionQueue();

 private:
  ChannelPtr channel_;
  CqPtr cq_;
  bool busy_poll_;
  unsigned unacked_events_ = 0;
};

std::string gid_to_string(const ibv_gid& gid);
ibv_gid gid_from_string(const std::string& text);
const char* wc_status_name(ibv_wc_status s);

}  // namespace crx::verbs_seq
