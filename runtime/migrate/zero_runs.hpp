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
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace crx::migrate::zero_runs {

inline constexpr uint32_t kBytes = 1;
inline constexpr uint32_t kZeros = 2;
inline constexpr size_t kHeaderSize = 8;
// What a frame may say; a larger length is a malformed channel.
inline constexpr uint32_t kMaxBytes = 16u << 20;
inline constexpr uint32_t kMaxZeros = 1u << 30;

// Whether the 4096 bytes at page are all zero.
bool is_zero_page(const char* page);

struct Header {
  uint32_t kind = 0;
  uint32_t length = 0;
};
// Throws Error (Cause::Invalid) naming what is wrong with it.
Header parse_header(const char* bytes);

// Builds what goes onto the network: with framing, bytes and pages in
// frames (consecutive zero pages in one); without, the bytes as they are.
class Encoder {
 public:
  explicit Encoder(bool framed) : framed_(framed) {}
  bool framed() const { return framed_; }
  void bytes(const char* data, size_t len);
  // One page of CRIU's data (4096 bytes).
  void page(const char* data);
  // What to send since the last clear(); whole frames only.
  const std::string& wire() const { return out_; }
  void clear();
  // Pages sent as zeros so far.
  uint64_t zero_pages() const { return zero_pages_; }

 private:
  void open(uint32_t kind);
  void grow(uint32_t by);

  bool framed_;
  std::string out_;
  uint32_t open_kind_ = 0;  // of the frame at the end of out_, 0: none
  size_t open_at_ = 0;      // its header's offset in out_
  uint32_t open_len_ = 0;
  uint64_t zero_pages_ = 0;
};

}  // namespace crx::migrate::zero_runs
