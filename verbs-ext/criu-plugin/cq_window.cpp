#include "cq_window.hpp"

#include <cstring>

#include "ibv_migr.h"

namespace crx::verbs_plugin {
namespace {

// A bound on a ring: rxe's largest CQ is 32768 slots of 128 bytes (4 MiB).
constexpr uint64_t kMaxRing = 16u << 20;

// A CQ record's ring geometry, checked: a power-of-two slot count and
// indices inside the ring (what the kernel writes and RESTORE_QUEUE takes).
struct Ring {
  uint32_t mask = 0;
  uint32_t elem = 0;
  uint32_t producer = 0;
  uint32_t consumer = 0;
  uint64_t live_bytes() const { return uint64_t((producer - consumer) & mask) * elem; }
};

std::optional<Ring> ring_of(const rxe_migr_queue& q, std::string* why) {
  if (q.num_elem < 2 || (q.num_elem & (q.num_elem - 1)) || q.elem_size == 0 ||
      uint64_t{q.num_elem} * q.elem_size > kMaxRing) {
    *why = "CQ ring of " + std::to_string(q.num_elem) + " x " + std::to_string(q.elem_size) +
           " bytes is not a ring rxe makes";
    return std::nullopt;
  }
  if (q.producer >= q.num_elem || q.consumer >= q.num_elem) {
    *why = "CQ indices " + std::to_string(q.producer) + "/" + std::to_string(q.consumer) +
           " outside its " + std::to_string(q.num_elem) + " slots";
    return std::nullopt;
  }
  return Ring{q.num_elem - 1, q.elem_size, q.producer, q.consumer};
}

}  // namespace

bool check_cq_windows(std::span<const uint8_t> dump, std::string* why) {
  rxe_migr_dump_hdr hdr;
  if (dump.size() < sizeof(hdr)) {
    *why = "dump shorter than its header";
    return false;
  }
  std::memcpy(&hdr, dump.data(), sizeof(hdr));
  if (hdr.total_len != dump.size()) {
    *why = "dump of " + std::to_string(dump.size()) + " bytes, its header says " +
           std::to_string(hdr.total_len);
    return false;
  }
  const rxe_migr_rec_hdr* r = nullptr;
  int err = 0;
  while ((r = ibv_migr_next_record(dump.data(), dump.size(), r, &err))) {
    if (r->type != RXE_MIGR_OBJ_CQ) continue;
    rxe_migr_cq body;
    std::memcpy(&body, r + 1, sizeof(body));
    auto ring = ring_of(body.queue, why);
    if (!ring) return false;
    if (body.queue.data_len != ring->live_bytes()) {
      *why = "CQ " + std::to_string(r->handle) + " carries " +
             std::to_string(body.queue.data_len) + " ring bytes, its indices say " +
             std::to_string(ring->live_bytes());
      return false;
    }
  }
  if (err) {
    *why = "malformed dump";
    return false;
  }
  return true;
}

}  // namespace crx::verbs_plugin
