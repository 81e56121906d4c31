// Small rxe dumps (rxe_migr_abi.h) built by hand for the plugin's unit
// tests: a PD, an MR, CQs with chosen rings and indices, a QP with rings.
#pragma once
#include <cstdint>
#include <cstring>
#include <vector>

#include "rxe_migr_abi.h"

namespace crx::verbs_plugin::test {

class DumpBuilder {
 public:
  DumpBuilder& pd(uint32_t handle) { return record(RXE_MIGR_OBJ_PD, handle, {}, {}); }

  DumpBuilder& mr(uint32_t handle) {
    rxe_migr_mr m{};
    m.pd_handle = 1;
    m.mrn = 3;
    m.addr = 0x7f0000001000;
    m.length = 4096;
    return record(RXE_MIGR_OBJ_MR, handle, bytes_of(m), {});
  }

  // A CQ of num_elem slots of elem_size bytes; slot i holds bytes
  // (handle, i) repeated, so every entry can be told from every other.
  DumpBuilder& cq(uint32_t handle, uint32_t num_elem, uint32_t elem_size, uint32_t producer,
                  uint32_t consumer) {
    rxe_migr_cq c{};
    c.cqe = num_elem - 1;
    c.comp_channel = ~0u;
    c.queue = {num_elem, elem_size, producer, consumer, producer, num_elem * elem_size};
    std::vector<uint8_t> ring(size_t{num_elem} * elem_size);
    for (uint32_t i = 0; i < num_elem; i++)
      for (uint32_t b = 0; b < elem_size; b++)
        ring[size_t{i} * elem_size + b] = uint8_t(b % 2 ? handle : i + 1);
    return record(RXE_MIGR_OBJ_CQ, handle, bytes_of(c), ring);
  }

  // The same CQ as the kernel dumps it with IBV_MIGR_DUMP_CQ_WINDOWS: only
  // the entries from consumer up to producer, in that order.
  DumpBuilder& cq_window(uint32_t handle, uint32_t num_elem, uint32_t elem_size,
                         uint32_t producer, uint32_t consumer) {
    rxe_migr_cq c{};
    c.cqe = num_elem - 1;
    c.comp_channel = ~0u;
    std::vector<uint8_t> live;
    for (uint32_t i = consumer % num_elem; i != producer % num_elem; i = (i + 1) % num_elem)
      for (uint32_t b = 0; b < elem_size; b++) live.push_back(uint8_t(b % 2 ? handle : i + 1));
    c.queue = {num_elem, elem_size, producer, consumer, producer, uint32_t(live.size())};
    return record(RXE_MIGR_OBJ_CQ, handle, bytes_of(c), live);
  }

  // A QP whose send ring (8 x 64 bytes) is all 0x11 with indices that
  // would leave most of it out, were it cut like a CQ.
  DumpBuilder& qp(uint32_t handle) {
    rxe_migr_qp q{};
    q.sq = {8, 64, 1, 1, 1, 8 * 64};
    return record(RXE_MIGR_OBJ_QP, handle, bytes_of(q), std::vector<uint8_t>(8 * 64, 0x11));
  }

  std::vector<uint8_t> dump() const {
    rxe_migr_dump_hdr h{RXE_MIGR_MAGIC, RXE_MIGR_ABI_VERSION, count_,
                        uint32_t(sizeof(h) + body_.size())};
    std::vector<uint8_t> out = bytes_of(h);
    out.insert(out.end(), body_.begin(), body_.end());
    return out;
  }

 private:
  template <class T>
  static std::vector<uint8_t> bytes_of(const T& v) {
    std::vector<uint8_t> out(sizeof(v));
    std::memcpy(out.data(), &v, sizeof(v));
    return out;
  }

  DumpBuilder& record(uint32_t type, uint32_t handle, const std::vector<uint8_t>& body,
                      const std::vector<uint8_t>& ring) {
    rxe_migr_rec_hdr h{};
    h.type = type;
    h.handle = handle;
    const size_t len = (sizeof(h) + body.size() + ring.size() + 7) & ~size_t{7};
    h.len = uint32_t(len);
    std::vector<uint8_t> rec = bytes_of(h);
    rec.insert(rec.end(), body.begin(), body.end());
    rec.insert(rec.end(), ring.begin(), ring.end());
    rec.resize(len, 0);
    body_.insert(body_.end(), rec.begin(), rec.end());
    count_++;
    return *this;
  }

  std::vector<uint8_t> body_;
  uint32_t count_ = 0;
};

}  // namespace crx::verbs_plugin::test
