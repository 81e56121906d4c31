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

// One record of the dump and, for a CQ, its checked ring.
struct Step {
  const rxe_migr_rec_hdr* rec;
  std::optional<Ring> ring;
};

// Writes ring's live entries at dst, in order from the consumer.
void put_window(const Ring& ring, const uint8_t* whole, uint8_t* dst) {
  for (uint32_t i = ring.consumer; i != ring.producer; i = (i + 1) & ring.mask) {
    std::memcpy(dst, whole + uint64_t{i} * ring.elem, ring.elem);
    dst += ring.elem;
  }
}

// Writes the window's entries into their slots of the zeroed ring at dst.
void put_whole(const Ring& ring, const uint8_t* window, uint8_t* dst) {
  for (uint32_t i = ring.consumer; i != ring.producer; i = (i + 1) & ring.mask) {
    std::memcpy(dst + uint64_t{i} * ring.elem, window, ring.elem);
    window += ring.elem;
  }
}

// Copies dump record by record into a new dump, each CQ's ring turned
// into its window or made whole again; nullopt and *why set if the dump
// is malformed or a CQ's ring is not what the other form has. The records
// are checked and the new dump's size summed first, so that it is
// allocated once and each byte written once: in a restored task under
// TCG, growing it by doubling and building each whole ring apart cost as
// much as the rest of the load.
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
  std::vector<Step> steps;
  uint64_t size = sizeof(h);
  const rxe_migr_rec_hdr* r = nullptr;
  int err = 0;
  while ((r = ibv_migr_next_record(dump.data(), dump.size(), r, &err))) {
    if (r->type != RXE_MIGR_OBJ_CQ) {
      steps.push_back({r, std::nullopt});
      size += r->len;
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
    steps.push_back({r, ring});
    size += pad8(kCqHead + (to == To::Window ? ring->live_bytes() : ring->whole_bytes()));
    if (size > kMaxDump) {
      *why = "CQ rings of more than " + std::to_string(kMaxDump) + " bytes";
      return std::nullopt;
    }
  }
  if (err) {
    *why = "malformed dump";
    return std::nullopt;
  }
  if (size > UINT32_MAX) {
    *why = "dump of more than 4 GiB";
    return std::nullopt;
  }
  h.total_len = static_cast<uint32_t>(size);

  std::vector<uint8_t> out(size, 0);
  uint8_t* at = out.data();
  std::memcpy(at, &h, sizeof(h));
  at += sizeof(h);
  for (const Step& s : steps) {
    const auto* p = reinterpret_cast<const uint8_t*>(s.rec);
    if (!s.ring) {
      std::memcpy(at, p, s.rec->len);
      at += s.rec->len;
      continue;
    }
    const uint64_t ring_bytes =
        to == To::Window ? s.ring->live_bytes() : s.ring->whole_bytes();
    rxe_migr_rec_hdr hdr;
    rxe_migr_cq body;
    std::memcpy(&hdr, p, sizeof(hdr));
    std::memcpy(&body, p + sizeof(hdr), sizeof(body));
    body.queue.data_len = static_cast<uint32_t>(ring_bytes);
    hdr.len = static_cast<uint32_t>(pad8(kCqHead + ring_bytes));
    std::memcpy(at, &hdr, sizeof(hdr));
    std::memcpy(at + sizeof(hdr), &body, sizeof(body));
    if (to == To::Window)
      put_window(*s.ring, p + kCqHead, at + kCqHead);
    else
      put_whole(*s.ring, p + kCqHead, at + kCqHead);
    at += hdr.len;
  }
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
