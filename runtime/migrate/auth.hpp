// How both ends of a migration connection prove the shared key, and what
// protects the connection afterwards. The client's first frame, in clear,
// says which wire security it wants; the server refuses a mismatch with one
// line on both sides before anything else happens.
//
// TLS (the default): TLS 1.3 keyed by the shared key as an external PSK
// (tls_session.hpp). The handshake is the mutual proof -- the client's PSK
// binder proves the key to the server, the server's Finished proves it to
// the client, fresh randoms stop replay, (EC)DHE gives forward secrecy --
// so no HMAC challenge runs inside it:
//
//   client -> Hello     {version, channel, session, security: "tls"}
//   server -> StartTls  (or Error: the server wants clear text)
//   TLS 1.3 handshake, PSK identity "crx-migrate-v1 <channel> <session>"
//   server    takes channel and session from the (authenticated) identity
//
// Every later frame is inside TLS: a flipped, dropped, replayed or
// injected byte fails the record's AES-GCM tag and ends the connection.
//
// TLS with certificates (--tls-cert/--tls-key/--tls-ca, cert_credentials.hpp)
// instead of the key: both ends present a certificate and verify the
// other's chain. Channel and session travel as the client's ALPN protocol
// "crx-migrate-v1 <channel> <session>", which the server echoes: it is in
// the transcript that the client's CertificateVerify signs and both
// Finished messages cover, so as with the PSK identity a relay cannot move
// a connection to another channel or migration. In TLS 1.3 the server
// checks the client's certificate after the client has finished, so on
// the control connection the server confirms with AuthOk (inside TLS)
// before the client goes on: a refused sender learns it before it sends
// the manifest.
//
//   client -> Hello     {version, channel, session, security: "tls-cert"}
//   server -> StartTls
//   TLS 1.3 handshake, certificates both ways, ALPN as above
//   server -> AuthOk    (control connection only; inside TLS)
//
// Clear text (--insecure-plaintext on both ends): the HMAC-SHA256
// challenge-response below, then frames with a CRC only:
//
//   client -> Hello     {version, channel, session, nonce_c, security: "plaintext"}
//   server -> Challenge {nonce_s, proof_s = HMAC(k, "server"|channel|session|nonce_c|nonce_s)}
//   client    checks proof_s (a receiver without the key is refused here)
//   client -> Response  {proof_c = HMAC(k, "client"|channel|session|nonce_s|nonce_c)}
//   server    checks proof_c -> AuthOk, or Error "authentication failed"
//
// Fresh 32-byte nonces on both sides stop replay; the role labels stop
// reflection.
#pragma once
#include <string>
#include <string_view>

#include "migrate/frame.hpp"
#include "migrate/tls_cipher.hpp"

namespace crx::migrate {

class CertCredentials;

// Reads a secret file: a regular file (not followed through a symlink)
// with no group/other access (0600 or 0400), else Error naming `what`
// and the path ("key file /etc/crx/migrate.key has mode 0644; ...",
// Cause::Permission for the mode).
std::string read_owner_only_file(const std::string& path, const std::string& what);

class SharedKey {
 public:
  // Reads a key file: must be a regular file with no group/other access
  // (0600 or 0400), at least 16 bytes after trimming trailing whitespace.
  static SharedKey from_file(const std::string& path);
  // For tests.
  static SharedKey from_bytes(std::string bytes);

  // HMAC-SHA256 of data under this key (32 raw bytes).
  std::string hmac(std::string_view data) const;
  // The TLS 1.3 external PSK: HKDF-SHA256 of the key (salt
  // "crx-migrate-v1", info "tls13 external psk"), 32 bytes.
  std::string tls_psk() const;

 private:
  std::string bytes_;
};

// Tls: TLS 1.3 keyed by the shared key (PSK); TlsCert: TLS 1.3 with X.509
// certificates on both ends; Plaintext: --insecure-plaintext.
enum class WireSecurity { Tls, Plaintext, TlsCert };
// "tls" / "plaintext" / "tls-cert", as the Hello says it.
const char* wire_security_name(WireSecurity w);

// What this end proves itself with: the key for Tls and Plaintext, the
// certificates for TlsCert.
struct Credentials {
  WireSecurity wire = WireSecurity::Tls;
  const SharedKey* key = nullptr;
  const CertCredentials* cert = nullptr;
  TlsCipher cipher = TlsCipher::Auto;  // with TLS: the suites (tls_cipher.hpp)
};

struct AuthPeer {
  std::string channel;  // "control" or "pages"
  std::string session;  // the migration session id (hex)
};

// Receiver side. Throws Error (and tells the peer) when the peer does not
// prove the key or wants the other wire security; restores the
// connection's max frame size on success. With TLS the connection is
// encrypted from here on; a "pages" one is switched to kernel TLS when its
// fd is released (FrameConn::release_fd). The migration code always says
// which security it wants (SenderOptions/ReceiverOptions default to TLS);
// the default here is the clear-text handshake the fuzz target drives.
AuthPeer authenticate_as_server(FrameConn& conn, const SharedKey& key,
                                WireSecurity wire = WireSecurity::Plaintext);
void authenticate_as_client(FrameConn& conn, const Credentials& creds, std::string_view channel,
                            std::string_view session);
// Either; throws Error when the credentials for `creds.wire` are missing.
AuthPeer authenticate_as_server(FrameConn& conn, const Credentials& creds);
// Sender side. Throws Error when the receiver does not prove the key,
// refuses ours or wants the other wire security.
void authenticate_as_client(FrameConn& conn, const SharedKey& key, std::string_view channel,
                            std::string_view session,
                            WireSecurity wire = WireSecurity::Plaintext);
void authenticate_as_client(FrameConn& conn, const Credentials& creds, std::string_view channel,
                            std::string_view session);

std::string random_hex(size_t bytes);
std::string to_hex(std::string_view bytes);

}  // namespace crx::migrate
