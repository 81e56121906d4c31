// The CRIU verbs plugin's own image file (crx-verbs-<id>.img,
// verbs-ext/criu-plugin/image.hpp) as the restore reads it: decode(), and
// for a context image the dump inside it walked as restore_context() walks
// it (ibv_migr_next_record, every record read whole, and a CQ's window
// made into the first and last chunk of its ring as REFILL sends them,
// ibv_migr_cq_window_bytes). A decoded image must encode and decode to
// the same thing: both take a context's dump as the kernel hands it, each
// CQ's ring as its window (cq_window.hpp).
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "ibv_migr.h"
#include "image.hpp"

namespace vp = crx::verbs_plugin;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::vector<uint8_t> bytes(data, data + size);
  std::string why;
  auto img = vp::decode(bytes, &why);
  if (!img) {
    if (why.empty()) __builtin_trap();  // refused without saying why
    return 0;
  }
  auto written = vp::encode(*img, &why);
  if (!written) __builtin_trap();  // what decode() gave back must encode
  auto again = vp::decode(*written, &why);
  if (!again || again->kind != img->kind || again->ctx_id != img->ctx_id ||
      again->evt_type != img->evt_type || again->evt_handle != img->evt_handle ||
      again->device != img->device || again->cdev_path != img->cdev_path ||
      again->queues.size() != img->queues.size() || again->dump != img->dump)
    __builtin_trap();
  if (img->kind != vp::ImageKind::Context) return 0;
  const std::vector<uint8_t>& dump = img->dump;
  const rxe_migr_rec_hdr* r = nullptr;
  int err = 0;
  while ((r = ibv_migr_next_record(dump.data(), dump.size(), r, &err))) {
    auto p = reinterpret_cast<const uint8_t*>(r);
    uint8_t sum = 0;
    for (uint32_t i = 0; i < r->len; i++) sum ^= p[i];
    asm volatile("" : : "r"(sum));
    if (r->type != RXE_MIGR_OBJ_CQ) continue;
    // decode() checked the window: the library must take it
    rxe_migr_cq cq;
    std::memcpy(&cq, r + 1, sizeof(cq));
    static uint8_t chunk[0xf000];
    const uint32_t ring = cq.queue.num_elem * cq.queue.elem_size;
    const uint32_t n = std::min<uint32_t>(ring, sizeof(chunk));
    if (ibv_migr_cq_window_bytes(&cq.queue, p + sizeof(*r) + sizeof(cq), 0, n, chunk) < 0 ||
        ibv_migr_cq_window_bytes(&cq.queue, p + sizeof(*r) + sizeof(cq), ring - n, n, chunk) < 0)
      __builtin_trap();
  }
  (void)ibv_migr_check_dump(dump.data(), dump.size());
  return 0;
}
