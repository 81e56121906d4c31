// The CRIU verbs plugin's own image file (crx-verbs-<id>.img,
// verbs-ext/criu-plugin/image.hpp) as the restore reads it: decode(), and
// for a context image the dump inside it walked as restore_context() walks
// it (ibv_migr_next_record, every record read whole). A decoded image must
// encode and decode to the same thing: encode() takes a context's dump as
// the kernel hands it (each CQ's ring as its window, which is what the
// image carries), decode() gives it back with the rings whole
// (cq_window.hpp).
#include <cstddef>
#include <cstdint>
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
  vp::Image carried = *img;
  if (img->kind == vp::ImageKind::Context) {
    // the image's last bytes are its dump as carried (image.hpp: a
    // 160-byte header, 24 bytes per queue map, then the dump)
    const size_t at = 160 + img->queues.size() * 24;
    carried.dump.assign(bytes.begin() + at, bytes.end());
  }
  auto written = vp::encode(carried, &why);
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
  }
  (void)ibv_migr_check_dump(dump.data(), dump.size());
  return 0;
}
