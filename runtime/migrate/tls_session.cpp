#include "migrate/tls_session.hpp"

#include <fcntl.h>
#include <openssl/bio.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <pthread.h>
#include <signal.h>

#include <cerrno>
#include <cstring>

#include "common/error.hpp"
#include "migrate/auth.hpp"
#include "migrate/kernel_tls.hpp"

namespace crx::migrate {
namespace {

// TLS_AES_128_GCM_SHA256: every kernel with kTLS has it, and the PSK's
// hash (SHA-256) is the one `openssl s_client -psk` uses.
constexpr unsigned char kCipherId[2] = {0x13, 0x01};
constexpr const char* kCipherName = "TLS_AES_128_GCM_SHA256";

std::string from_hex(std::string_view hex) {
  std::string out;
  auto val = [](char c) {
    return c >= 'a' ? c - 'a' + 10 : c >= 'A' ? c - 'A' + 10 : c - '0';
  };
  for (size_t i = 0; i + 1 < hex.size(); i += 2)
    out.push_back(static_cast<char>(val(hex[i]) << 4 | val(hex[i + 1])));
  return out;
}

// OpenSSL writes the socket with write(2), not send(MSG_NOSIGNAL): a peer
// gone (reset, or the connection timed out) raises SIGPIPE, which killed
// crx migrate without a word. Blocked in this thread around each OpenSSL
// call; a SIGPIPE the call raised is taken back, and the call fails with
// EPIPE like any other socket error.
class SigpipeBlock {
 public:
  SigpipeBlock() {
    sigemptyset(&pipe_);
    sigaddset(&pipe_, SIGPIPE);
    sigset_t pending;
    sigpending(&pending);
    was_pending_ = sigismember(&pending, SIGPIPE) == 1;
    pthread_sigmask(SIG_BLOCK, &pipe_, &old_);
  }
  ~SigpipeBlock() {
    int saved = errno;
    sigset_t pending;
    sigpending(&pending);
    if (!was_pending_ && sigismember(&pending, SIGPIPE) == 1) {
      timespec now{0, 0};
      (void)sigtimedwait(&pipe_, nullptr, &now);
    }
    pthread_sigmask(SIG_SETMASK, &old_, nullptr);
    errno = saved;
  }
  SigpipeBlock(const SigpipeBlock&) = delete;
  SigpipeBlock& operator=(const SigpipeBlock&) = delete;

 private:
  sigset_t pipe_, old_;
  bool was_pending_ = false;
};

void set_nonblocking(int fd, bool on) {
  int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0) throw_errno("fcntl F_GETFL");
  flags = on ? flags | O_NONBLOCK : flags & ~O_NONBLOCK;
  if (::fcntl(fd, F_SETFL, flags) != 0) throw_errno("fcntl F_SETFL");
}

// The first error OpenSSL queued (its reason), and the queue emptied.
std::pair<int, std::string> take_ssl_error() {
  unsigned long e = ERR_get_error();
  int reason = ERR_GET_REASON(e);
  const char* text = e ? ERR_reason_error_string(e) : nullptr;
  ERR_clear_error();
  return {reason, text ? text : ""};
}

}  // namespace

TlsSession::TlsSession(Role role, const SharedKey& key, int fd, std::string peer, bool kernel)
    : role_(role), fd_(fd), peer_(std::move(peer)), kernel_(kernel), psk_(key.tls_psk()) {
  ERR_clear_error();
  ctx_ = SSL_CTX_new(role == Role::Client ? TLS_client_method() : TLS_server_method());
  if (!ctx_) throw Error("cannot make an OpenSSL TLS context");
  bool ok = SSL_CTX_set_min_proto_version(ctx_, TLS1_3_VERSION) == 1 &&
            SSL_CTX_set_max_proto_version(ctx_, TLS1_3_VERSION) == 1 &&
            SSL_CTX_set_ciphersuites(ctx_, kCipherName) == 1 &&
            // No tickets: no post-handshake record can reach a socket the
            // kernel decrypts, and no resumption to protect.
            SSL_CTX_set_num_tickets(ctx_, 0) == 1;
  if (!ok) {
    SSL_CTX_free(ctx_);
    throw Error("OpenSSL refused the TLS 1.3 settings for migration");
  }
  SSL_CTX_set_options(ctx_, SSL_OP_NO_TICKET);
  SSL_CTX_set_session_cache_mode(ctx_, SSL_SESS_CACHE_OFF);
  if (role == Role::Client) {
    SSL_CTX_set_psk_use_session_callback(ctx_, &TlsSession::use_psk);
  } else {
    SSL_CTX_set_psk_find_session_callback(ctx_, &TlsSession::find_psk);
  }
  if (kernel_) SSL_CTX_set_keylog_callback(ctx_, &TlsSession::keylog);
  ssl_ = SSL_new(ctx_);
  if (!ssl_ || SSL_set_fd(ssl_, fd_) != 1) {  // the socket BIO does not close fd_
    if (ssl_) SSL_free(ssl_);
    SSL_CTX_free(ctx_);
    throw Error("cannot make an OpenSSL TLS connection");
  }
  SSL_set_app_data(ssl_, this);
  if (kernel_) SSL_set_options(ssl_, SSL_OP_ENABLE_KTLS);
  if (role == Role::Client) {
    SSL_set_connect_state(ssl_);
  } else {
    SSL_set_accept_state(ssl_);
  }
  set_nonblocking(fd_, true);
}

TlsSession::~TlsSession() {
  // No SSL_shutdown: a close_notify on a socket handed to the kernel (or to
  // CRIU) would be a record the other end does not expect. The peer sees
  // the TCP connection end; the protocol's frames say whether it was done.
  SSL_free(ssl_);
  SSL_CTX_free(ctx_);
  OPENSSL_cleanse(psk_.data(), psk_.size());
  OPENSSL_cleanse(peer_secret_.data(), peer_secret_.size());
}

SSL_SESSION* TlsSession::psk_session() {
  SSL_SESSION* s = SSL_SESSION_new();
  const SSL_CIPHER* cipher = SSL_CIPHER_find(ssl_, kCipherId);
  if (!s || !cipher ||
      SSL_SESSION_set1_master_key(s, reinterpret_cast<const unsigned char*>(psk_.data()),
                                  psk_.size()) != 1 ||
      SSL_SESSION_set_cipher(s, cipher) != 1 ||
      SSL_SESSION_set_protocol_version(s, TLS1_3_VERSION) != 1) {
    SSL_SESSION_free(s);
    return nullptr;
  }
  return s;
}

int TlsSession::use_psk(SSL* ssl, const EVP_MD* md, const unsigned char** id, size_t* idlen,
                        SSL_SESSION** sess) {
  auto* self = static_cast<TlsSession*>(SSL_get_app_data(ssl));
  if (md && md != EVP_sha256()) {  // only after a HelloRetryRequest for another hash
    *sess = nullptr;
    return 1;
  }
  *sess = self->psk_session();
  if (!*sess) return 0;
  *id = reinterpret_cast<const unsigned char*>(self->identity_.data());
  *idlen = self->identity_.size();
  return 1;
}

int TlsSession::find_psk(SSL* ssl, const unsigned char* identity, size_t len, SSL_SESSION** sess) {
  auto* self = static_cast<TlsSession*>(SSL_get_app_data(ssl));
  std::string id(reinterpret_cast<const char*>(identity), len);
  *sess = nullptr;
  if (id.rfind(std::string(kIdentityPrefix) + " ", 0) != 0) {
    self->unknown_identity_ = true;
    return 1;  // no such PSK: the handshake fails
  }
  self->identity_ = id;
  *sess = self->psk_session();
  return *sess ? 1 : 0;
}

void TlsSession::keylog(const SSL* ssl, const char* line) {
  // "<LABEL> <client random hex> <secret hex>": keep the peer's
  // application traffic secret for the kernel's receiving key.
  auto* self = static_cast<TlsSession*>(SSL_get_app_data(ssl));
  const char* want =
      self->role_ == Role::Client ? "SERVER_TRAFFIC_SECRET_0 " : "CLIENT_TRAFFIC_SECRET_0 ";
  if (std::strncmp(line, want, std::strlen(want)) != 0) return;
  const char* secret = std::strrchr(line, ' ');
  if (secret) self->peer_secret_ = from_hex(secret + 1);
}

void TlsSession::fail(const char* what, int ssl_error) {
  int sys = errno;
  auto [reason, text] = take_ssl_error();
  if (ssl_error == SSL_ERROR_SYSCALL && text.empty()) {
    if (sys == 0) throw Error(peer_ + " closed the connection during the TLS " + what);
    throw_errno(std::string("TLS ") + what + " with " + peer_, sys);
  }
  if (reason == SSL_R_BINDER_DOES_NOT_VERIFY) {
    throw Error("authentication failed: " + peer_ +
                    " does not know the migration key (check the key file on both hosts)",
                Cause::Permission);
  }
  // OpenSSL's server answers a bad PSK binder with illegal_parameter
  // (3.0) or decrypt_error: in this PSK-only handshake, the key differs.
  if ((reason == SSL_R_TLSV1_ALERT_DECRYPT_ERROR || reason == SSL_R_SSLV3_ALERT_ILLEGAL_PARAMETER) &&
      role_ == Role::Client && std::strcmp(what, "handshake") == 0) {
    throw Error("authentication failed: the receiver at " + peer_ +
                    " refused our key (check the key file on both hosts)",
                Cause::Permission);
  }
  if (unknown_identity_) {
    throw Error("authentication failed: " + peer_ + " is not a crx migration peer (unknown PSK identity)",
                Cause::Permission);
  }
  if (reason == SSL_R_DECRYPTION_FAILED_OR_BAD_RECORD_MAC || reason == SSL_R_DECRYPTION_FAILED ||
      reason == SSL_R_SSLV3_ALERT_BAD_RECORD_MAC) {
    throw Error("TLS record from " + peer_ + " failed its integrity check (altered in transit)",
                Cause::IO, EBADMSG);
  }
  if (reason == SSL_R_UNEXPECTED_EOF_WHILE_READING) {
    throw Error(peer_ + " closed the connection during the TLS " + what, Cause::IO);
  }
  throw Error(std::string("TLS ") + what + " with " + peer_ + " failed: " +
                  (text.empty() ? "error " + std::to_string(ssl_error) : text),
              Cause::IO);
}

TlsIo TlsSession::handshake() {
  std::lock_guard lock(mutex_);
  SigpipeBlock no_sigpipe;
  ERR_clear_error();
  errno = 0;
  int r = SSL_do_handshake(ssl_);
  if (r == 1) return TlsIo::Done;
  int e = SSL_get_error(ssl_, r);
  if (e == SSL_ERROR_WANT_READ) return TlsIo::WantRead;
  if (e == SSL_ERROR_WANT_WRITE) return TlsIo::WantWrite;
  fail("handshake", e);
}

TlsIo TlsSession::read(char* data, size_t len, size_t* got) {
  std::lock_guard lock(mutex_);
  SigpipeBlock no_sigpipe;
  ERR_clear_error();
  errno = 0;
  *got = 0;
  if (SSL_read_ex(ssl_, data, len, got) == 1) return TlsIo::Done;
  int e = SSL_get_error(ssl_, 0);
  if (e == SSL_ERROR_WANT_READ) return TlsIo::WantRead;
  if (e == SSL_ERROR_WANT_WRITE) return TlsIo::WantWrite;
  if (e == SSL_ERROR_ZERO_RETURN) return TlsIo::Eof;  // close_notify
  if (e == SSL_ERROR_SYSCALL && errno == 0 && ERR_peek_error() == 0) return TlsIo::Eof;
  if (e == SSL_ERROR_SSL && ERR_GET_REASON(ERR_peek_error()) == SSL_R_UNEXPECTED_EOF_WHILE_READING) {
    ERR_clear_error();
    return TlsIo::Eof;  // TCP ended without close_notify: the frames say if early
  }
  fail("read", e);
}

TlsIo TlsSession::write(const char* data, size_t len, size_t* put) {
  std::lock_guard lock(mutex_);
  SigpipeBlock no_sigpipe;
  ERR_clear_error();
  errno = 0;
  *put = 0;
  if (len == 0) return TlsIo::Done;
  if (SSL_write_ex(ssl_, data, len, put) == 1) return TlsIo::Done;
  int e = SSL_get_error(ssl_, 0);
  if (e == SSL_ERROR_WANT_READ) return TlsIo::WantRead;
  if (e == SSL_ERROR_WANT_WRITE) return TlsIo::WantWrite;
  fail("write", e);
}

void TlsSession::hand_to_kernel() {
  std::lock_guard lock(mutex_);
  if (!kernel_) throw Error("hand_to_kernel on a TLS connection not made for it");
  // Bytes OpenSSL read but nobody consumed would be lost to CRIU: there
  // must be none (the peer sends nothing before the fd changes hands).
  if (SSL_has_pending(ssl_)) {
    throw Error("page channel: " + peer_ + " sent data before the TLS handshake ended",
                Cause::Invalid);
  }
  if (BIO_get_ktls_send(SSL_get_wbio(ssl_)) != 1) {
    std::string why;
    if (kernel_tls_available(&why)) why = "the kernel refused the page channel's sending key";
    throw Error("page channel: no kernel TLS: " + why +
                    "; load it, or pass --insecure-plaintext to both crx migrate and crx receive",
                Cause::Unsupported);
  }
  if (BIO_get_ktls_recv(SSL_get_rbio(ssl_)) != 1) {
    // OpenSSL 3.0 does not do it for TLS 1.3: no application record was
    // read here yet (no tickets, the peer waits), so the sequence is 0.
    install_kernel_tls_rx(fd_, peer_secret_, 0);
  }
  OPENSSL_cleanse(peer_secret_.data(), peer_secret_.size());
  set_nonblocking(fd_, false);
}

}  // namespace crx::migrate
