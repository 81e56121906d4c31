// The verbs dump format (verbs-ext/include/rxe_migr_abi.h) as libverbs-ext
// walks it: ibv_migr_next_record() and ibv_migr_check_dump(), which the
// CRIU plugin and the library rely on before they read a record's body and
// rings. The input is copied into a buffer of exactly its size (ASan
// catches a read past it); every record handed out is then read whole, and
// its body and ring lengths are checked against what the iterator promised.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>

#include "ibv_migr.h"

namespace {

size_t body_size(uint32_t type) {
  switch (type) {
    case RXE_MIGR_OBJ_PD: return 0;
    case RXE_MIGR_OBJ_AH: return sizeof(rxe_migr_ah);
    case RXE_MIGR_OBJ_MR: return sizeof(rxe_migr_mr);
    case RXE_MIGR_OBJ_CQ: return sizeof(rxe_migr_cq);
    case RXE_MIGR_OBJ_SRQ: return sizeof(rxe_migr_srq);
    case RXE_MIGR_OBJ_QP: return sizeof(rxe_migr_qp);
    case RXE_MIGR_OBJ_ASYNC_EVENT:
    case RXE_MIGR_OBJ_COMP_CHANNEL: return sizeof(rxe_migr_event_file);
    default: __builtin_trap();  // the iterator let an unknown type through
  }
}

uint64_t trailer_size(const rxe_migr_rec_hdr* r) {
  const void* b = r + 1;
  switch (r->type) {
    case RXE_MIGR_OBJ_CQ: return static_cast<const rxe_migr_cq*>(b)->queue.data_len;
    case RXE_MIGR_OBJ_SRQ: return static_cast<const rxe_migr_srq*>(b)->queue.data_len;
    case RXE_MIGR_OBJ_QP: return ibv_migr_qp_trailer_len(static_cast<const rxe_migr_qp*>(b));
    default: return 0;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::unique_ptr<uint8_t[]> buf(new uint8_t[size ? size : 1]);
  if (size) std::memcpy(buf.get(), data, size);
  const uint8_t* begin = buf.get();
  const uint8_t* end = begin + size;
  const rxe_migr_rec_hdr* r = nullptr;
  int err = 0;
  unsigned n = 0;
  while ((r = ibv_migr_next_record(begin, size, r, &err))) {
    auto p = reinterpret_cast<const uint8_t*>(r);
    if (p < begin + sizeof(rxe_migr_dump_hdr) || p + sizeof(*r) > end || r->len > size_t(end - p))
      __builtin_trap();
    if (reinterpret_cast<uintptr_t>(p) % 8) __builtin_trap();
    if (sizeof(*r) + body_size(r->type) + trailer_size(r) > r->len) __builtin_trap();
    uint8_t sum = 0;
    for (uint32_t i = 0; i < r->len; i++) sum ^= p[i];
    asm volatile("" : : "r"(sum));
    n++;
  }
  int check = ibv_migr_check_dump(begin, size);
  if (err == 0 && check == 0) {
    auto h = reinterpret_cast<const rxe_migr_dump_hdr*>(begin);
    if (h->count != n) __builtin_trap();
  }
  return 0;
}
