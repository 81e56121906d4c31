// The migration handshake: everything a peer can send before it has
// proved the key. Input byte 0: bit 0 picks raw bytes or well-formed
// frames (fuzz_common.hpp), bit 1 the side: the receiver
// (authenticate_as_server: Hello, then Response) or the sender
// (authenticate_as_client: Challenge, then AuthOk) facing a hostile peer.
// The bytes arrive over a real socket through FrameConn, with the
// handshake's 4 KiB frame limit. Without the key the fuzzer cannot pass
// the HMAC check; what follows authentication is fuzz_migrate_session.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_common.hpp"
#include "migrate/auth.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const auto key = crx::migrate::SharedKey::from_bytes("fuzz-key-0123456789abcdef");
  if (size == 0 || size > 32768) return 0;
  bool client = data[0] & 2;
  std::string stream = crx::fuzz::frame_stream(data, size);
  crx::fuzz::SocketFeed feed;
  if (!crx::fuzz::feed_socket(stream, &feed)) return 0;
  crx::migrate::FrameConn conn(std::move(feed.reader), "fuzz peer");
  try {
    if (client) {
      crx::migrate::authenticate_as_client(conn, key, "control", "0123456789abcdef");
    } else {
      (void)crx::migrate::authenticate_as_server(conn, key);
    }
    __builtin_trap();  // passed the key check without the key
  } catch (const crx::Error&) {
  }
  return 0;
}
