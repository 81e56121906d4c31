#include "seq/verbs.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/mman.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "common/error.hpp"

namespace crx::verbs_seq {

ContextPtr open_device(const std::string& name) {
  int n = 0;
  ibv_device** list = ibv_get_device_list(&n);
  if (!list) throw_errno("ibv_get_device_list");
  std::unique_ptr<ibv_device*, decltype(&ibv_free_device_list)> guard(list, ibv_free_device_list);
  for (int i = 0; i < n; ++i) {
    if (!name.empty() && name != ibv_get_device_name(list[i])) continue;
    ibv_context* ctx = ibv_open_device(list[i]);
    if (!ctx) throw_errno("ibv_open_device " + std::string(ibv_get_device_name(list[i])));
    return ContextPtr(ctx);
  }
  throw Error(name.empty() ? "no RDMA device found" : "RDMA device " + name + " not found");
}

static bool is_ipv4_mapped(const ibv_gid& g) {
  static const uint8_t prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  return std::memcmp(g.raw, prefix, sizeof prefix) == 0;
}

int pick_gid_index(ibv_context* ctx, int port, int requested) {
  if (requested >= 0) return requested;
  ibv_port_attr pa{};
  if (ibv_query_port(ctx, port, &pa)) throw_errno("ibv_query_port");
  for (int i = 0; i < pa.gid_tbl_len; ++i) {
    ibv_gid g{};
    if (ibv_query_gid(ctx, port, i, &g)) continue;
    if (is_ipv4_mapped(g)) return i;
  }
  return 0;
}

LocalInfo query_local(ibv_context* ctx, int port, int gid_index) {
  ibv_port_attr pa{};
  if (ibv_query_port(ctx, port, &pa)) throw_errno("ibv_query_port");
  if (pa.state != IBV_PORT_ACTIVE)
    throw Error("port " + std::to_string(port) + " of " + ibv_get_device_name(ctx->device) +
                " is not active");
  LocalInfo info;
  info.lid = pa.lid;
  info.mtu = pa.active_mtu;
  if (ibv_query_gid(ctx, port, gid_index, &info.gid))
    throw_errno("ibv_query_gid index " + std::to_string(gid_index));
  return info;
}

Memory::Memory(size_t bytes, unsigned char fill, bool huge) : bytes_(bytes) {
  constexpr size_t kHuge = size_t{2} << 20;
  map_bytes_ = huge ? bytes_ + kHuge : bytes_;
  void* p = mmap(nullptr, map_bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw_errno("mmap " + std::to_string(map_bytes_) + " bytes");
  map_ = static_cast<char*>(p);
  data_ = map_;
  if (huge) {
    auto at = reinterpret_cast<uintptr_t>(map_);
    data_ = reinterpret_cast<char*>((at + kHuge - 1) & ~(kHuge - 1));
    if (madvise(data_, bytes_, MADV_HUGEPAGE)) throw_errno("madvise MADV_HUGEPAGE");
  } else if (madvise(data_, bytes_, MADV_NOHUGEPAGE)) {
    // The guests' kernel makes THPs by default, and whether a 16 MiB
    // mapping gets some depends on the guest's memory: a test must know
    // which it has (soft-dirty bits behave differently on them).
    throw_errno("madvise MADV_NOHUGEPAGE");
  }
  std::memset(data_, fill, bytes_);
}

Memory::~Memory() { munmap(map_, map_bytes_); }

Buffer::Buffer(ibv_pd* pd, size_t bytes, unsigned char fill, int extra_access, bool huge)
    : mem_(bytes, fill, huge) {
  mr_.reset(ibv_reg_mr(pd, mem_.data(), bytes, IBV_ACCESS_LOCAL_WRITE | extra_access));
  if (!mr_) {
    int err = errno;
    throw_errno("ibv_reg_mr " + std::to_string(bytes) + " bytes", err);
  }
}

Buffer::~Buffer() { mr_.reset(); }

static void modify(ibv_qp* qp, ibv_qp_attr& attr, int mask, const char* what) {
  if (int err = ibv_modify_qp(qp, &attr, mask))
    throw_errno(std::string("ibv_modify_qp to ") + what + " (QPN " + std::to_string(qp->qp_num) + ")",
                err);
}

void qp_to_init(ibv_qp* qp, const QpSettings& s) {
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_INIT;
  a.pkey_index = 0;
  a.port_num = static_cast<uint8_t>(s.port);
  a.qp_access_flags = static_cast<unsigned>(s.access);
  modify(qp, a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS, "INIT");
}

void qp_to_rtr(ibv_qp* qp, const QpSettings& s, const LocalInfo& remote, ibv_mtu mtu,
               const QpEndpoint& peer) {
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_RTR;
  a.path_mtu = mtu;
  a.dest_qp_num = peer.qpn;
  a.rq_psn = peer.psn;
  a.max_dest_rd_atomic = 1;
  a.min_rnr_timer = 12;
  a.ah_attr.is_global = 1;
  a.ah_attr.grh.dgid = remote.gid;
  a.ah_attr.grh.sgid_index = static_cast<uint8_t>(s.gid_index);
  a.ah_attr.grh.hop_limit = 1;
  a.ah_attr.dlid = remote.lid;
  a.ah_attr.port_num = static_cast<uint8_t>(s.port);
  modify(qp, a,
         IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
             IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER,
         "RTR");
}

void qp_to_rts(ibv_qp* qp, const QpSettings& s, uint32_t my_psn) {
  ibv_qp_attr a{};
  a.qp_state = IBV_QPS_RTS;
  a.timeout = static_cast<uint8_t>(s.timeout);
  a.retry_cnt = static_cast<uint8_t>(s.retry_cnt);
  a.rnr_retry = static_cast<uint8_t>(s.rnr_retry);
  a.sq_psn = my_psn;
  a.max_rd_atomic = 1;
  modify(qp, a,
         IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
             IBV_QP_MAX_QP_RD_ATOMIC,
         "RTS");
}

CompletionQueue::CompletionQueue(ibv_context* ctx, int entries, bool busy_poll)
    : busy_poll_(busy_poll) {
  if (!busy_poll_) {
    channel_.reset(ibv_create_comp_channel(ctx));
    if (!channel_) throw_errno("ibv_create_comp_channel");
    int flags = fcntl(channel_->fd, F_GETFL);
    if (flags < 0 || fcntl(channel_->fd, F_SETFL, flags | O_NONBLOCK) < 0)
      throw_errno("make the completion channel non-blocking");
  }
  cq_.reset(ibv_create_cq(ctx, entries, nullptr, channel_.get(), 0));
  if (!cq_) throw_errno("ibv_create_cq with " + std::to_string(entries) + " entries");
  if (!busy_poll_ && ibv_req_notify_cq(cq_.get(), 0)) throw_errno("ibv_req_notify_cq");
}

CompletionQueue::~CompletionQueue() {
  if (cq_ && unacked_events_) ibv_ack_cq_events(cq_.get(), unacked_events_);
}

int CompletionQueue::wait(ibv_wc* wc, int max, int timeout_ms) {
  for (;;) {
    int n = ibv_poll_cq(cq_.get(), max, wc);
    if (n < 0) throw Error("ibv_poll_cq failed");
    if (n > 0) return n;
    if (busy_poll_) return 0;  // the caller's clock decides about time-outs
    // Arm, then poll again: a completion that arrived before arming would
    // otherwise raise no event.
    if (ibv_req_notify_cq(cq_.get(), 0)) throw_errno("ibv_req_notify_cq");
    n = ibv_poll_cq(cq_.get(), max, wc);
    if (n < 0) throw Error("ibv_poll_cq failed");
    if (n > 0) return n;
    pollfd pfd{channel_->fd, POLLIN, 0};
    int r = ::poll(&pfd, 1, timeout_ms);
    if (r < 0) {
      if (errno == EINTR) return 0;
      throw_errno("poll on the completion channel");
    }
    if (r == 0) return 0;
    ibv_cq* ev_cq = nullptr;
    void* ev_ctx = nullptr;
    if (ibv_get_cq_event(channel_.get(), &ev_cq, &ev_ctx) == 0) {
      if (++unacked_events_ >= 64) {
        ibv_ack_cq_events(cq_.get(), unacked_events_);
        unacked_events_ = 0;
      }
    } else if (errno != EAGAIN) {
      throw_errno("ibv_get_cq_event");
    }
    timeout_ms = 0;  // an event came: poll, and do not sleep again this call
  }
}

std::string gid_to_string(const ibv_gid& gid) {
  char out[33];
  for (int i = 0; i < 16; ++i) std::snprintf(out + 2 * i, 3, "%02x", gid.raw[i]);
  return out;
}

ibv_gid gid_from_string(const std::string& text) {
  if (text.size() != 32) throw Error("bad GID from peer: " + text);
  ibv_gid g{};
  for (int i = 0; i < 16; ++i) {
    unsigned v;
    if (std::sscanf(text.c_str() + 2 * i, "%2x", &v) != 1) throw Error("bad GID from peer: " + text);
    g.raw[i] = static_cast<uint8_t>(v);
  }
  return g;
}

const char* wc_status_name(ibv_wc_status s) { return ibv_wc_status_str(s); }

}  // namespace crx::verbs_seq
