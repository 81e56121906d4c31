#include "migrate/zero_runs.hpp"

#include <lz4.h>

#include <algorithm>
#include <cstring>

#include "common/error.hpp"

namespace crx::migrate::zero_runs {

namespace {
constexpr size_t kPage = 4096;
// Smaller buffers (a record's header and an answer's wait) go as they are.
constexpr size_t kMinCompress = 2048;
constexpr unsigned kMaxBackoff = 64;

void put_header(char* at, uint32_t kind, uint32_t length) {
  std::memcpy(at, &kind, 4);
  std::memcpy(at + 4, &length, 4);
}
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
  if (h.kind == kLz4 && h.length <= 4)
    throw Error("compressed page channel frame of " + std::to_string(h.length) +
                    " bytes, too short to state its decoded length",
                Cause::Invalid);
  if (h.kind == kLz4 && h.length <= kMaxLz4) return h;
  if (h.kind != kBytes && h.kind != kZeros && h.kind != kLz4)
    throw Error("page channel frame of unknown kind " + std::to_string(h.kind), Cause::Invalid);
  throw Error("page channel frame of " + std::to_string(h.length) + " bytes, more than its kind allows",
              Cause::Invalid);
}

void inflate(const char* payload, size_t len, std::string& out) {
  if (len <= 4)
    throw Error("compressed page channel frame of " + std::to_string(len) +
                    " bytes, too short to state its decoded length",
                Cause::Invalid);
  uint32_t decoded = 0;
  std::memcpy(&decoded, payload, 4);
  if (decoded > kMaxBytes)
    throw Error("compressed page channel frame states " + std::to_string(decoded) +
                    " bytes decoded, more than a frame may hold",
                Cause::Invalid);
  out.resize(decoded);
  const int n = LZ4_decompress_safe(payload + 4, out.data(), static_cast<int>(len - 4),
                                    static_cast<int>(decoded));
  if (n != static_cast<int>(decoded))
    throw Error("compressed page channel frame does not decode to the " + std::to_string(decoded) +
                    " bytes it states",
                Cause::Invalid);
}

Encoder::Encoder(bool framed, bool compress) : framed_(framed), compress_(framed && compress) {
  if (compress_) lz4_state_.resize((static_cast<size_t>(LZ4_sizeofState()) + 7) / 8);
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

const std::string& Encoder::seal() {
  const size_t raw = out_.size() - sealed_at_;
  if (compress_ && raw >= kMinCompress && raw <= kMaxBytes) {
    if (skip_ > 0) {
      skip_--;
    } else {
      const int bound = LZ4_compressBound(static_cast<int>(raw));
      scratch_.resize(kHeaderSize + 4 + static_cast<size_t>(bound));
      const int n = LZ4_compress_fast_extState(lz4_state_.data(), out_.data() + sealed_at_,
                                               scratch_.data() + kHeaderSize + 4,
                                               static_cast<int>(raw), bound, 1);
      const size_t framed_size = kHeaderSize + 4 + static_cast<size_t>(n);
      if (n > 0 && framed_size <= raw - raw / 8) {
        put_header(scratch_.data(), kLz4, static_cast<uint32_t>(4 + n));
        const auto decoded = static_cast<uint32_t>(raw);
        std::memcpy(scratch_.data() + kHeaderSize, &decoded, 4);
        out_.replace(sealed_at_, raw, scratch_.data(), framed_size);
        compressed_in_ += raw;
        compressed_out_ += framed_size;
        backoff_ = 0;
      } else {
        backoff_ = std::min(backoff_ == 0 ? 1 : 2 * backoff_, kMaxBackoff);
        skip_ = backoff_;
      }
    }
  }
  sealed_at_ = out_.size();
  open_kind_ = 0;  // what follows starts a frame of its own
  return out_;
}

void Encoder::clear() {
  out_.clear();
  sealed_at_ = 0;
  open_kind_ = 0;
  open_len_ = 0;
}

}  // namespace crx::migrate::zero_runs
