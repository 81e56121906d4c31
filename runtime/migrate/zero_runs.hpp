// The page channel between crx's two relays in frames, so that a page of
// zeros crosses the network as a count, not as 4 KiB.
//
// Why: a process's memory holds many pages that are all zeros and still
// present (CRIU skips only the shared zero page): memory registered for
// RDMA is faulted in, zeroed, at registration, and an MPI rank over UCX
// registers tens of MiB of receive pools of which most bytes are never
// written (tests/bench/mpi, Result 16). CRIU sends each such page with its
// data, and every byte is encrypted on the source and decrypted on the
// destination, on the vCPU the container shares with the migration.
//
// How: the sender's page filter (page_dedup.hpp) writes CRIU's stream as a
// sequence of frames, `u32 kind, u32 length` in host order (as CRIU's own
// protocol): kind 1 is `length` bytes of the stream that follow, kind 2
// is `length` zero bytes that do not. The destination's relay
// (page_relay.hpp) writes the stream back as it was for `criu
// page-server`, which sees exactly what CRIU sent: nothing about CRIU's
// images changes, only the wire. Only where the destination said it
// decodes frames (Acceptance::zero_runs) and only for the rounds the
// sender says (RoundStart::zero_runs); the answers of the page server go
// back unframed.
//
// Compressed (kind 3): what the encoder buffered for one write to the
// network, frames of kind 1 and 2, as one LZ4 block. Why: the pages that
// are not all zeros are still mostly zero bytes in a rank (an MPI rank's
// receive slots and heap: 74% of the bytes of its non-zero pages, Result
// 24 in tests/bench/mpi), and on an encrypted channel every byte costs
// the cipher on both ends, which under the test bed's TCG runs at ~20-30
// MiB/s; with LZ4 in front, a rank's pre-copy round sent 4-6 MiB for 42
// and CRIU wrote its pages in 3-4 s instead of 7-10. The payload is `u32
// decoded length` then the block; it decodes to frames of kind 1 and 2
// only. Sent only where the destination said it decodes them
// (Acceptance::lz4_frames) and only on an encrypted channel (clear text
// costs a few CPU cycles a byte: compression would cost more than it
// saves). A buffer LZ4 does not shrink by an eighth goes as it was, and
// the encoder then leaves the next buffers alone for a while (1, 2, 4 ..
// 64 of them), so incompressible memory costs little LZ4 work.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "common/error.hpp"

namespace crx::migrate::zero_runs {

inline constexpr uint32_t kBytes = 1;
inline constexpr uint32_t kZeros = 2;
inline constexpr uint32_t kLz4 = 3;
inline constexpr size_t kHeaderSize = 8;
// What a frame may say; a larger length is a malformed channel.
inline constexpr uint32_t kMaxBytes = 16u << 20;
inline constexpr uint32_t kMaxZeros = 1u << 30;
// A compressed frame decodes to kMaxBytes at most; its length is at most
// the decoded length's word and LZ4's bound for that (LZ4_COMPRESSBOUND).
inline constexpr uint32_t kMaxLz4 = 4 + kMaxBytes + kMaxBytes / 255 + 16;

// Whether the 4096 bytes at page are all zero.
bool is_zero_page(const char* page);

struct Header {
  uint32_t kind = 0;
  uint32_t length = 0;
};
// Throws Error (Cause::Invalid) naming what is wrong with it.
Header parse_header(const char* bytes);

// A kLz4 frame's payload decoded into out (resized to the decoded
// length); throws Error (Cause::Invalid) for a block that does not decode
// to the length it states.
void inflate(const char* payload, size_t len, std::string& out);
// Calls each(header, data) for every frame in what a kLz4 frame decoded
// to (data: a kBytes frame's bytes, nullptr for kZeros). Throws Error
// (Cause::Invalid) for a frame cut short, of an unknown kind or of kLz4.
template <typename Each>
void for_each_inner_frame(const std::string& decoded, Each each);

// Builds what goes onto the network: with framing, bytes and pages in
// frames (consecutive zero pages in one); without, the bytes as they are.
class Encoder {
 public:
  // compress: framed, what seal() hands out goes in kLz4 frames where
  // that makes it smaller.
  explicit Encoder(bool framed, bool compress = false);
  bool framed() const { return framed_; }
  void bytes(const char* data, size_t len);
  // One page of CRIU's data (4096 bytes).
  void page(const char* data);
  // What is buffered since the last clear(); whole frames only.
  const std::string& wire() const { return out_; }
  // What to send: the buffer, what came since the last seal() compressed
  // where that pays. Later bytes start a new frame.
  const std::string& seal();
  void clear();
  // Pages sent as zeros so far.
  uint64_t zero_pages() const { return zero_pages_; }
  // Bytes of frames that went into kLz4 frames, and those frames' size.
  uint64_t compressed_in() const { return compressed_in_; }
  uint64_t compressed_out() const { return compressed_out_; }

 private:
  void open(uint32_t kind);
  void grow(uint32_t by);

  bool framed_;
  std::string out_;
  uint32_t open_kind_ = 0;  // of the frame at the end of out_, 0: none
  size_t open_at_ = 0;      // its header's offset in out_
  uint32_t open_len_ = 0;
  uint64_t zero_pages_ = 0;
  bool compress_;
  size_t sealed_at_ = 0;     // out_ up to here is sealed
  unsigned skip_ = 0;        // seals left to send as they are
  unsigned backoff_ = 0;     // what skip_ is set to after the next miss
  std::vector<uint64_t> lz4_state_;  // LZ4_compress_fast_extState's, 8-aligned
  std::string scratch_;
  uint64_t compressed_in_ = 0, compressed_out_ = 0;
};

template <typename Each>
void for_each_inner_frame(const std::string& decoded, Each each) {
  size_t off = 0;
  while (off < decoded.size()) {
    if (decoded.size() - off < kHeaderSize)
      throw Error("compressed page channel frame ends inside a frame's header", Cause::Invalid);
    const Header h = parse_header(decoded.data() + off);
    off += kHeaderSize;
    if (h.kind == kLz4)
      throw Error("compressed page channel frame holds a compressed frame", Cause::Invalid);
    if (h.kind == kZeros) {
      each(h, static_cast<const char*>(nullptr));
      continue;
    }
    if (decoded.size() - off < h.length)
      throw Error("compressed page channel frame ends inside a frame", Cause::Invalid);
    each(h, decoded.data() + off);
    off += h.length;
  }
}

}  // namespace crx::migrate::zero_runs
