#include "image.hpp"

#include <cstring>

#include "cq_window.hpp"

namespace crx::verbs_plugin {
namespace {

constexpr char kMagic[4] = {'C', 'R', 'X', 'V'};

struct Header {
  char magic[4];
  uint32_t version;
  uint32_t kind;
  uint32_t ctx_id;
  uint32_t evt_type;
  uint32_t evt_handle;
  uint32_t nqueues;
  uint32_t dump_len;
  char device[64];
  char cdev_path[64];
};
static_assert(sizeof(Header) == 160);

struct PackedQueue {
  uint32_t which;
  uint32_t handle;
  uint64_t offset;
  uint64_t size;
};
static_assert(sizeof(PackedQueue) == 24);

void put_string(char (&dst)[64], const std::string& s) {
  std::memset(dst, 0, sizeof(dst));
  std::memcpy(dst, s.data(), std::min(s.size(), sizeof(dst) - 1));
}

std::string get_string(const char (&src)[64]) {
  return std::string(src, strnlen(src, sizeof(src)));
}

}  // namespace

std::optional<std::vector<uint8_t>> encode(const Image& img, std::string* why) {
  static const std::vector<uint8_t> kNone;
  const std::vector<uint8_t>& dump = img.kind == ImageKind::Context ? img.dump : kNone;
  if (img.kind == ImageKind::Context && !check_cq_windows(dump, why)) return std::nullopt;
  Header h{};
  std::memcpy(h.magic, kMagic, sizeof(kMagic));
  h.version = kImageVersion;
  h.kind = static_cast<uint32_t>(img.kind);
  h.ctx_id = img.ctx_id;
  h.evt_type = img.evt_type;
  h.evt_handle = img.evt_handle;
  h.nqueues = static_cast<uint32_t>(img.queues.size());
  h.dump_len = static_cast<uint32_t>(dump.size());
  put_string(h.device, img.device);
  put_string(h.cdev_path, img.cdev_path);

  std::vector<uint8_t> out(sizeof(h) + img.queues.size() * sizeof(PackedQueue) +
                           dump.size());
  uint8_t* p = out.data();
  std::memcpy(p, &h, sizeof(h));
  p += sizeof(h);
  for (const QueueMap& q : img.queues) {
    PackedQueue pq{q.which, q.handle, q.offset, q.size};
    std::memcpy(p, &pq, sizeof(pq));
    p += sizeof(pq);
  }
  if (!dump.empty()) std::memcpy(p, dump.data(), dump.size());
  return out;
}

std::optional<Image> decode(const std::vector<uint8_t>& bytes, std::string* why) {
  Header h;
  if (bytes.size() < sizeof(h)) {
    *why = "shorter than its header";
    return std::nullopt;
  }
  std::memcpy(&h, bytes.data(), sizeof(h));
  if (std::memcmp(h.magic, kMagic, sizeof(kMagic)) != 0) {
    *why = "bad magic";
    return std::nullopt;
  }
  if (h.version != kImageVersion) {
    *why = "image version " + std::to_string(h.version) + ", this plugin reads " +
           std::to_string(kImageVersion);
    return std::nullopt;
  }
  if (h.kind != static_cast<uint32_t>(ImageKind::Context) &&
      h.kind != static_cast<uint32_t>(ImageKind::Event)) {
    *why = "unknown kind " + std::to_string(h.kind);
    return std::nullopt;
  }
  // encode() always leaves a NUL; a name filling its field was not written
  // by it (and would come back one byte shorter after a round trip)
  if (strnlen(h.device, sizeof(h.device)) == sizeof(h.device) ||
      strnlen(h.cdev_path, sizeof(h.cdev_path)) == sizeof(h.cdev_path)) {
    *why = "device name without its terminating NUL";
    return std::nullopt;
  }
  uint64_t need = sizeof(h) + uint64_t(h.nqueues) * sizeof(PackedQueue) + h.dump_len;
  if (bytes.size() != need) {
    *why = "size " + std::to_string(bytes.size()) + " does not match its header (" +
           std::to_string(need) + ")";
    return std::nullopt;
  }
  Image img;
  img.kind = static_cast<ImageKind>(h.kind);
  img.ctx_id = h.ctx_id;
  img.evt_type = h.evt_type;
  img.evt_handle = h.evt_handle;
  img.device = get_string(h.device);
  img.cdev_path = get_string(h.cdev_path);
  const uint8_t* p = bytes.data() + sizeof(h);
  for (uint32_t i = 0; i < h.nqueues; i++) {
    PackedQueue pq;
    std::memcpy(&pq, p, sizeof(pq));
    p += sizeof(pq);
    img.queues.push_back({pq.which, pq.handle, pq.offset, pq.size});
  }
  if (img.kind == ImageKind::Event) {
    if (h.dump_len != 0) {
      *why = "event image with a dump";
      return std::nullopt;
    }
    return img;
  }
  if (!check_cq_windows({p, h.dump_len}, why)) return std::nullopt;
  img.dump.assign(p, p + h.dump_len);
  return img;
}

std::string image_name(uint32_t id) { return "crx-verbs-" + std::to_string(id) + ".img"; }

}  // namespace crx::verbs_plugin
