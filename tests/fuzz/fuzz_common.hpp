// Helpers shared by the fuzz targets (tests/fuzz/README.md).
#pragma once
#include <sys/socket.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "common/error.hpp"
#include "common/unique_fd.hpp"
#include "migrate/frame.hpp"

namespace crx::fuzz {

// A connected stream socketpair: `reader` is what the code under test reads
// from; `bytes` were written into the other end, whose write side is then
// shut (EOF after them). The other end stays open so that the code's own
// replies (challenge, error frames) land in its receive buffer and do not
// fail with EPIPE. Returns false when the bytes do not fit the socket
// buffers in one go (the caller skips such an input).
struct SocketFeed {
  UniqueFd reader;
  UniqueFd peer;
};

inline bool feed_socket(std::string_view bytes, SocketFeed* out) {
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) std::abort();
  out->reader.reset(sv[0]);
  out->peer.reset(sv[1]);
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::send(sv[1], bytes.data() + done, bytes.size() - done, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n <= 0) return false;
    done += static_cast<size_t>(n);
  }
  ::shutdown(sv[1], SHUT_WR);
  return true;
}

// The fuzzer's input as a frame stream. The first byte picks the encoding:
// even: the rest is sent as it is (raw headers, checksums and all);
// odd: the rest is a list of records {type u8, length u16 (big-endian),
// payload}, each sent as a well-formed frame (encode_frame: right magic,
// version and CRC) so that mutations reach the payload parsers behind the
// checksum. A short last record takes what is left.
inline std::string frame_stream(const uint8_t* data, size_t size) {
  if (size == 0) return {};
  std::string_view in(reinterpret_cast<const char*>(data) + 1, size - 1);
  if ((data[0] & 1) == 0) return std::string(in);
  std::string out;
  while (in.size() >= 3) {
    auto type = static_cast<uint8_t>(in[0]);
    size_t len = static_cast<size_t>(static_cast<uint8_t>(in[1])) << 8 | static_cast<uint8_t>(in[2]);
    in.remove_prefix(3);
    if (len > in.size()) len = in.size();
    std::string_view payload = in.substr(0, len);
    in.remove_prefix(len);
    if (migrate::is_known_frame_type(type)) {
      out += migrate::encode_frame(static_cast<migrate::FrameType>(type), payload);
    } else {
      // unknown types still go out with a valid header and CRC
      std::string f = migrate::encode_frame(migrate::FrameType::Progress, payload);
      f[5] = static_cast<char>(type);
      out += f;
    }
  }
  return out;
}

}  // namespace crx::fuzz
