// Mutual challenge-response with a shared key (HMAC-SHA256, OpenSSL
// libcrypto). Both ends prove they know the key before the receiver reads
// any frame other than the handshake's own small ones:
//
//   client -> Hello     {version, channel, session, nonce_c}
//   server -> Challenge {nonce_s, proof_s = HMAC(k, "server"|channel|session|nonce_c|nonce_s)}
//   client    checks proof_s (a receiver without the key is refused here)
//   client -> Response  {proof_c = HMAC(k, "client"|channel|session|nonce_s|nonce_c)}
//   server    checks proof_c -> AuthOk, or Error "authentication failed"
//
// Fresh 32-byte nonces on both sides stop replay; the role labels stop
// reflection. The stream is not encrypted (see the README's migration
// section for why).
#pragma once
#include <string>
#include <string_view>

#include "migrate/frame.hpp"

namespace crx::migrate {

class SharedKey {
 public:
  // Reads a key file: must be a regular file with no group/other access
  // (0600 or 0400), at least 16 bytes after trimming trailing whitespace.
  static SharedKey from_file(const std::string& path);
  // For tests.
  static SharedKey from_bytes(std::string bytes);

  // HMAC-SHA256 of data under this key (32 raw bytes).
  std::string hmac(std::string_view data) const;

 private:
  std::string bytes_;
};

struct AuthPeer {
  std::string channel;  // "control" or "pages"
  std::string session;  // the migration session id (hex)
};

// Receiver side. Throws Error (and tells the peer) when the peer does not
// prove the key; restores the connection's max frame size on success.
AuthPeer authenticate_as_server(FrameConn& conn, const SharedKey& key);
// Sender side. Throws Error when the receiver does not prove the key or
// refuses ours.
void authenticate_as_client(FrameConn& conn, const SharedKey& key, std::string_view channel,
                            std::string_view session);

std::string random_hex(size_t bytes);
std::string to_hex(std::string_view bytes);

}  // namespace crx::migrate
