#include "migrate/zero_runs.hpp"

#include <cstring>

#include "common/error.hpp"

namespace crx::migrate::zero_runs {

namespace {
constexpr size_t kPage = 4096;
}  // namespace

bool is_zero_page(const char* page) {
  // Word by word, a cache line at a time: a page with data usually stops
  // at its first line.
  for (size_t off = 0; off < kPage; off += 64) {
    uint64_t w[8];
    std::memcpy(w, page + off, sizeof w);
    if ((w[0] | w[1] | w[2] | w[3] | w[4] | w[5] | w[6] | w[7]) != 0) return false;
  }
  return true;
}

Header parse_header(const char* bytes) {
  Header h;
  std::memcpy(&h.kind, bytes, 4);
  std::memcpy(&h.length, bytes + 4, 4);
  if (h.kind == kBytes && h.length <= kMaxBytes) return h;
  if (h.kind == kZeros && h.length <= kMaxZeros) return h;
  if (h.kind != kBytes && h.kind != kZeros)
    throw Error("page channel frame of unknown kind " + std::to_string(h.kind), Cause::Invalid);
  throw Error("page channel frame of " + std::to_string(h.length) + " bytes, more than its kind allows",
              Cause::Invalid);
}

void Encoder::open(uint32_t kind) {
  open_kind_ = kind;
  open_at_ = out_.size();
  open_len_ = 0;
  char h[kHeaderSize] = {};
  std::memcpy(h, &kind, 4);
  out_.append(h, sizeof h);
}

void Encoder::grow(uint32_t by) {
  open_len_ += by;
  std::memcpy(out_.data() + open_at_ + 4, &open_len_, 4);
}

void Encoder::bytes(const char* data, size_t len) {
  if (!framed_) {
    out_.append(data, len);
    return;
  }
  while (len > 0) {
    if (open_kind_ != kBytes || open_len_ == kMaxBytes) open(kBytes);
    const uint32_t n = static_cast<uint32_t>(std::min<size_t>(len, kMaxBytes - open_len_));
    out_.append(data, n);
    grow(n);
    data += n;
    len -= n;
  }
}

void Encoder::page(const char* data) {
  if (!framed_ || !is_zero_page(data)) {
    bytes(data, kPage);
    return;
  }
  if (open_kind_ != kZeros || open_len_ > kMaxZeros - kPage) open(kZeros);
  grow(kPage);
  zero_pages_++;
}

void Encoder::clear() {
  out_.clear();
  open_kind_ = 0;
  open_len_ = 0;
}

}  // namespace crx::migrate::zero_runs
