#include "cq_window.hpp"

#include <cstring>

#include "ibv_migr.h"

namespace crx::verbs_plugin {
namespace {

// Bounds on what whole_cq_rings() makes: rxe's largest CQ is 32768 slots
// of 128 bytes (4 MiB).
constexpr uint64_t kMaxRing = 16u << 20;
constexpr uint64_t kMaxDump = 64u << 20;

constexpr size_t kCqHead = sizeof(rxe_migr_rec_hdr) + sizeof(rxe_migr_cq);

size_t pad8(size_t n) { return (n + 7) & ~size_t{7}; }

// A CQ record's ring geometry, checked: a power-of-two slot count and
// indices inside the ring (what the kernel writes and RESTORE_QUEUE takes).
struct Ring {
  uint32_t mask = 0;
  uint32_t elem = 0;
  uint32_t producer = 0;
  uint32_t consumer = 0;
  uint64_t whole_bytes() const { return (uint64_t{mask} + 1) * elem; }
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

// One record of the dump and, for a CQ, its checked ring.
struct Step {
  const rxe_migr_rec_hdr* rec;
  std::optional<Ring> ring;
};

// A dump with CQ windows, checked, and the size it has with whole rings.
struct Plan {
  rxe_migr_dump_hdr hdr;
  std::vector<Step> steps;
  uint64_t whole_size = 0;
};

// Walks dump record by record; nullopt and *why set if it is malformed or
// a CQ's ring is not the window its indices describe.
std::optional<Plan> plan_of(std::span<const uint8_t> dump, std::string* why) {
  Plan plan;
  if (dump.size() < sizeof(plan.hdr)) {
    *why = "dump shorter than its header";
    return std::nullopt;
  }
  std::memcpy(&plan.hdr, dump.data(), sizeof(plan.hdr));
  if (plan.hdr.total_len != dump.size()) {
    *why = "dump of " + std::to_string(dump.size()) + " bytes, its header says " +
           std::to_string(plan.hdr.total_len);
    return std::nullopt;
  }
  plan.whole_size = sizeof(plan.hdr);
  const rxe_migr_rec_hdr* r = nullptr;
  int err = 0;
  while ((r = ibv_migr_next_record(dump.data(), dump.size(), r, &err))) {
    if (r->type != RXE_MIGR_OBJ_CQ) {
      plan.steps.push_back({r, std::nullopt});
      plan.whole_size += r->len;
      continue;
    }
    rxe_migr_cq body;
    std::memcpy(&body, r + 1, sizeof(body));
    auto ring = ring_of(body.queue, why);
    if (!ring) return std::nullopt;
    if (body.queue.data_len != ring->live_bytes()) {
      *why = "CQ " + std::to_string(r->handle) + " carries " +
             std::to_string(body.queue.data_len) + " ring bytes, its indices say " +
             std::to_string(ring->live_bytes());
      return std::nullopt;
    }
    plan.steps.push_back({r, ring});
    plan.whole_size += pad8(kCqHead + ring->whole_bytes());
  }
  if (err) {
    *why = "malformed dump";
    return std::nullopt;
  }
  return plan;
}

}  // namespace

bool check_cq_windows(std::span<const uint8_t> dump, std::string* why) {
  return plan_of(dump, why).has_value();
}

// The new dump is allocated once and each byte written once: in a
// restored task under TCG, growing it by doubling and building each
// whole ring apart cost as much as the rest of the load.
std::optional<std::vector<uint8_t>> whole_cq_rings(std::span<const uint8_t> cut,
                                                   std::string* why) {
  auto plan = plan_of(cut, why);
  if (!plan) return std::nullopt;
  if (plan->whole_size > kMaxDump) {
    *why = "CQ rings of more than " + std::to_string(kMaxDump) + " bytes";
    return std::nullopt;
  }
  rxe_migr_dump_hdr h = plan->hdr;
  h.total_len = static_cast<uint32_t>(plan->whole_size);
  std::vector<uint8_t> out(plan->whole_size, 0);
  uint8_t* at = out.data();
  std::memcpy(at, &h, sizeof(h));
  at += sizeof(h);
  for (const Step& s : plan->steps) {
    const auto* p = reinterpret_cast<const uint8_t*>(s.rec);
    if (!s.ring) {
      std::memcpy(at, p, s.rec->len);
      at += s.rec->len;
      continue;
    }
    rxe_migr_rec_hdr hdr;
    rxe_migr_cq body;
    std::memcpy(&hdr, p, sizeof(hdr));
    std::memcpy(&body, p + sizeof(hdr), sizeof(body));
    body.queue.data_len = static_cast<uint32_t>(s.ring->whole_bytes());
    hdr.len = static_cast<uint32_t>(pad8(kCqHead + s.ring->whole_bytes()));
    std::memcpy(at, &hdr, sizeof(hdr));
    std::memcpy(at + sizeof(hdr), &body, sizeof(body));
    // the window's entries into their slots of the zeroed ring
    const uint8_t* entry = p + kCqHead;
    for (uint32_t i = s.ring->consumer; i != s.ring->producer; i = (i + 1) & s.ring->mask) {
      std::memcpy(at + kCqHead + uint64_t{i} * s.ring->elem, entry, s.ring->elem);
      entry += s.ring->elem;
    }
    at += hdr.len;
  }
  return out;
}

}  // namespace crx::verbs_plugin
