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

enum class To { Window, Whole };

// The live entries of a whole ring, in order from the consumer.
std::vector<uint8_t> window_of(const Ring& ring, const uint8_t* whole) {
  std::vector<uint8_t> live;
  live.reserve(ring.live_bytes());
  for (uint32_t i = ring.consumer; i != ring.producer; i = (i + 1) & ring.mask) {
    const uint8_t* e = whole + uint64_t{i} * ring.elem;
    live.insert(live.end(), e, e + ring.elem);
  }
  return live;
}

// A whole ring with the window's entries in their slots, the rest zero.
std::vector<uint8_t> whole_of(const Ring& ring, const uint8_t* window) {
  std::vector<uint8_t> whole(ring.whole_bytes(), 0);
  for (uint32_t i = ring.consumer; i != ring.producer; i = (i + 1) & ring.mask) {
    std::memcpy(whole.data() + uint64_t{i} * ring.elem, window, ring.elem);
    window += ring.elem;
  }
  return whole;
}

// Appends a CQ record: r's header and body with the ring length set to
// ring.size(), then the ring, padded to 8 bytes.
void put_cq(const rxe_migr_rec_hdr* r, const std::vector<uint8_t>& ring,
            std::vector<uint8_t>* out) {
  rxe_migr_rec_hdr hdr;
  rxe_migr_cq body;
  std::memcpy(&hdr, r, sizeof(hdr));
  std::memcpy(&body, r + 1, sizeof(body));
  body.queue.data_len = static_cast<uint32_t>(ring.size());
  hdr.len = static_cast<uint32_t>(pad8(kCqHead + ring.size()));
  const size_t at = out->size();
  out->resize(at + hdr.len, 0);
  std::memcpy(out->data() + at, &hdr, sizeof(hdr));
  std::memcpy(out->data() + at + sizeof(hdr), &body, sizeof(body));
  if (!ring.empty()) std::memcpy(out->data() + at + kCqHead, ring.data(), ring.size());
}

// Copies dump record by record into a new dump, each CQ's ring turned
// into its window or made whole again; nullopt and *why set if the dump
// is malformed or a CQ's ring is not what the other form has.
std::optional<std::vector<uint8_t>> rewrite(const std::vector<uint8_t>& dump, To to,
                                            std::string* why) {
  if (dump.size() < sizeof(rxe_migr_dump_hdr)) {
    *why = "dump shorter than its header";
    return std::nullopt;
  }
  rxe_migr_dump_hdr h;
  std::memcpy(&h, dump.data(), sizeof(h));
  if (h.total_len != dump.size()) {
    *why = "dump of " + std::to_string(dump.size()) + " bytes, its header says " +
           std::to_string(h.total_len);
    return std::nullopt;
  }
  std::vector<uint8_t> out(dump.begin(), dump.begin() + sizeof(h));
  const rxe_migr_rec_hdr* r = nullptr;
  int err = 0;
  while ((r = ibv_migr_next_record(dump.data(), dump.size(), r, &err))) {
    const auto* p = reinterpret_cast<const uint8_t*>(r);
    if (r->type != RXE_MIGR_OBJ_CQ) {
      out.insert(out.end(), p, p + r->len);
      continue;
    }
    rxe_migr_cq body;
    std::memcpy(&body, r + 1, sizeof(body));
    auto ring = ring_of(body.queue, why);
    if (!ring) return std::nullopt;
    const uint32_t has = body.queue.data_len;
    const uint64_t want = to == To::Window ? ring->whole_bytes() : ring->live_bytes();
    if (has != want) {
      *why = "CQ " + std::to_string(r->handle) +
             (to == To::Window ? " dumped with " + std::to_string(has) + " of its " +
                                     std::to_string(want) + " ring bytes"
                               : " carries " + std::to_string(has) +
                                     " ring bytes, its indices say " + std::to_string(want));
      return std::nullopt;
    }
    put_cq(r, to == To::Window ? window_of(*ring, p + kCqHead) : whole_of(*ring, p + kCqHead),
           &out);
    if (out.size() > kMaxDump) {
      *why = "CQ rings of more than " + std::to_string(kMaxDump) + " bytes";
      return std::nullopt;
    }
  }
  if (err) {
    *why = "malformed dump";
    return std::nullopt;
  }
  if (out.size() > UINT32_MAX) {
    *why = "dump of more than 4 GiB";
    return std::nullopt;
  }
  h.total_len = static_cast<uint32_t>(out.size());
  std::memcpy(out.data(), &h, sizeof(h));
  return out;
}

}  // namespace

std::optional<std::vector<uint8_t>> cut_cq_rings(const std::vector<uint8_t>& dump,
                                                 std::string* why) {
  return rewrite(dump, To::Window, why);
}

std::optional<std::vector<uint8_t>> whole_cq_rings(const std::vector<uint8_t>& cut,
                                                   std::string* why) {
  return rewrite(cut, To::Whole, why);
}

}  // namespace crx::verbs_plugin
