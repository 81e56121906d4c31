// One TLS 1.3 connection of a migration (OpenSSL 3.0), keyed by the shared
// key as an external PSK (no certificates) or by X.509 certificates on both
// ends (cert_credentials.hpp); no session tickets. With the key the PSK
// identity names the channel and the session ("crx-migrate-v1 pages
// 5f0c..."), so it is covered by the handshake's binder; with certificates
// the same string is the client's only ALPN protocol, which the server
// must echo, so it is in the transcript both ends sign or MAC. Either way
// a relay cannot move a connection to another channel or migration.
//
// Non-blocking: each call makes one attempt and says what it waits for;
// FrameConn polls the socket with its time-out in between. Calls may come
// from two threads (one sending, one receiving): they are serialised here.
// The session never owns the socket.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "migrate/tls_cipher.hpp"

typedef struct ssl_st SSL;
typedef struct ssl_ctx_st SSL_CTX;
typedef struct ssl_session_st SSL_SESSION;
typedef struct evp_md_st EVP_MD;

namespace crx::migrate {

class SharedKey;
class CertCredentials;

enum class TlsIo { Done, WantRead, WantWrite, Eof };

class TlsSession {
 public:
  enum class Role { Client, Server };
  static constexpr const char* kIdentityPrefix = "crx-migrate-v1";

  // `kernel`: the connection will be handed to the kernel after the
  // handshake (the page channel; see kernel_tls.hpp). `cipher`: the suites
  // to offer or accept, in the order tls_cipher.hpp says.
  TlsSession(Role role, const SharedKey& key, int fd, std::string peer, bool kernel,
             TlsCipher cipher = TlsCipher::Auto);
  TlsSession(Role role, const CertCredentials& cert, int fd, std::string peer, bool kernel,
             TlsCipher cipher = TlsCipher::Auto);
  ~TlsSession();
  TlsSession(const TlsSession&) = delete;
  TlsSession& operator=(const TlsSession&) = delete;

  // The client's identity to offer: "<prefix> <channel> <session>" (as the
  // PSK identity, or with certificates as the ALPN protocol).
  void set_identity(std::string identity);
  // The server's: the identity the client offered (after the handshake).
  const std::string& identity() const { return identity_; }

  // Throws Error on a failed handshake: "authentication failed: ..." when
  // the keys differ or a certificate is refused, by either end
  // (Cause::Permission), else what TLS said.
  TlsIo handshake();
  TlsIo read(char* data, size_t len, size_t* got);
  TlsIo write(const char* data, size_t len, size_t* put);

  // The page channel: sending and receiving switched to the kernel (throws
  // Error naming what is missing), nothing left in OpenSSL's buffers, the
  // socket blocking again. From then on the fd is used without OpenSSL.
  void hand_to_kernel();

  // The suite the handshake agreed on (after it).
  TlsCipher negotiated() const;

 private:
  static int use_psk(SSL*, const EVP_MD*, const unsigned char**, size_t*, SSL_SESSION**);
  static int find_psk(SSL*, const unsigned char*, size_t, SSL_SESSION**);
  static void keylog(const SSL*, const char*);
  static int select_alpn(SSL*, const unsigned char**, unsigned char*, const unsigned char*,
                         unsigned int, void*);
  void init(Role role, TlsCipher cipher);  // the context and connection both kinds share
  void finish_init();
  SSL_SESSION* psk_session();
  [[noreturn]] void fail(const char* what, int ssl_error);
  void fail_certificate(int reason);
  void check_alpn();

  Role role_;
  int fd_;
  std::string peer_;
  bool kernel_;
  std::string psk_;
  std::string identity_;
  bool unknown_identity_ = false;
  bool certs_ = false;          // authenticated by certificates, not the PSK
  std::string peer_name_;       // certificates: the name the peer must carry, if any
  std::string peer_secret_;  // the peer's application traffic secret (kernel mode)
  SSL_CTX* ctx_ = nullptr;
  SSL* ssl_ = nullptr;
  std::mutex mutex_;
};

}  // namespace crx::migrate
