// Wire format of one crx-verbs-seq message: a fixed header at the start of
// the buffer and, when the message is long enough, the sequence number again
// in the last 8 bytes, so a truncated or torn message is noticed without
// touching every byte in between.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace crx::verbs_seq {

inline constexpr uint32_t kMagic = 0x43525853;  // "CRXS"
inline constexpr uint16_t kFlagFin = 1;         // last message of a QP
// --mr-remote-write: the WRITE pass numbered `total` is in place (mr_passes.hpp)
inline constexpr uint16_t kFlagMrPass = 2;

struct MessageHeader {
  uint32_t magic;
  uint16_t flags;
  uint16_t qp_index;  // index of the QP in the sender's list
  uint64_t seq;       // 0,1,2,... per QP; on FIN: number of data messages
  uint64_t total;     // on FIN: number of data messages sent on this QP;
                      // with kFlagMrPass: the pass number
};
static_assert(sizeof(MessageHeader) == 24);

inline constexpr size_t kMinMessageSize = sizeof(MessageHeader);
// A trailer is written when the header and trailer do not overlap.
inline constexpr size_t kTrailerMinSize = sizeof(MessageHeader) + sizeof(uint64_t);

inline void encode_message(void* buf, size_t size, uint16_t qp_index, uint64_t seq,
                           uint16_t flags, uint64_t total) {
  MessageHeader h{kMagic, flags, qp_index, seq, total};
  std::memcpy(buf, &h, sizeof h);
  if (size >= kTrailerMinSize)
    std::memcpy(static_cast<char*>(buf) + size - sizeof(uint64_t), &seq, sizeof seq);
}

// Byte i of the payload of message seq (between header and trailer).
inline uint8_t payload_byte(uint64_t seq, size_t i) {
  return static_cast<uint8_t>(seq * 131 + i * 7 + 1);
}

inline void fill_payload(void* buf, size_t size, uint64_t seq) {
  auto* p = static_cast<uint8_t*>(buf);
  size_t end = size >= kTrailerMinSize ? size - sizeof(uint64_t) : size;
  for (size_t i = sizeof(MessageHeader); i < end; ++i) p[i] = payload_byte(seq, i);
}

enum class Decode { Ok, Short, BadMagic, BadTrailer, BadPayload };

// Checks what can be checked about one received buffer of len bytes.
inline Decode decode_message(const void* buf, size_t len, MessageHeader& out,
                             bool verify_payload) {
  if (len < sizeof(MessageHeader)) return Decode::Short;
  std::memcpy(&out, buf, sizeof out);
  if (out.magic != kMagic) return Decode::BadMagic;
  if (out.flags & kFlagFin) return Decode::Ok;
  if (len >= kTrailerMinSize) {
    uint64_t trailer;
    std::memcpy(&trailer, static_cast<const char*>(buf) + len - sizeof trailer, sizeof trailer);
    if (trailer != out.seq) return Decode::BadTrailer;
  }
  if (verify_payload) {
    auto* p = static_cast<const uint8_t*>(buf);
    size_t end = len >= kTrailerMinSize ? len - sizeof(uint64_t) : len;
    for (size_t i = sizeof(MessageHeader); i < end; ++i)
      if (p[i] != payload_byte(out.seq, i)) return Decode::BadPayload;
  }
  return Decode::Ok;
}

}  // namespace crx::verbs_seq
