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
#include "migrate/cert_credentials.hpp"
#include "migrate/kernel_tls.hpp"

namespace crx::migrate {
namespace {

// The PSK session's suite: TLS 1.3 lets a PSK go with any suite of its
// hash, and both suites crx offers (tls_cipher.hpp) use SHA-256, the hash
// `openssl s_client -psk` uses.
constexpr unsigned char kPskCipherId[2] = {0x13, 0x01};

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

void TlsSession::init(Role role, TlsCipher cipher) {
  const std::string suites = tls13_ciphersuites(cipher);
  ERR_clear_error();
  ctx_ = SSL_CTX_new(role == Role::Client ? TLS_client_method() : TLS_server_method());
  if (!ctx_) throw Error("cannot make an OpenSSL TLS context");
  bool ok = SSL_CTX_set_min_proto_version(ctx_, TLS1_3_VERSION) == 1 &&
            SSL_CTX_set_max_proto_version(ctx_, TLS1_3_VERSION) == 1 &&
            SSL_CTX_set_ciphersuites(ctx_, suites.c_str()) == 1 &&
            // No tickets: no post-handshake record can reach a socket the
            // kernel decrypts, and no resumption to protect.
            SSL_CTX_set_num_tickets(ctx_, 0) == 1;
  if (!ok) {
    SSL_CTX_free(ctx_);
    ctx_ = nullptr;
    throw Error("OpenSSL refused the TLS 1.3 settings for migration");
  }
  SSL_CTX_set_options(ctx_, SSL_OP_NO_TICKET);
  SSL_CTX_set_session_cache_mode(ctx_, SSL_SESS_CACHE_OFF);
  if (kernel_) SSL_CTX_set_keylog_callback(ctx_, &TlsSession::keylog);
}

// After the kind's own settings on ctx_: the connection on fd_.
void TlsSession::finish_init() {
  ssl_ = SSL_new(ctx_);
  if (!ssl_ || SSL_set_fd(ssl_, fd_) != 1) {  // the socket BIO does not close fd_
    if (ssl_) SSL_free(ssl_);
    ssl_ = nullptr;
    SSL_CTX_free(ctx_);
    ctx_ = nullptr;
    throw Error("cannot make an OpenSSL TLS connection");
  }
  SSL_set_app_data(ssl_, this);
  if (kernel_) SSL_set_options(ssl_, SSL_OP_ENABLE_KTLS);
  if (role_ == Role::Client) {
    SSL_set_connect_state(ssl_);
  } else {
    SSL_set_accept_state(ssl_);
  }
  set_nonblocking(fd_, true);
}

TlsSession::TlsSession(Role role, const SharedKey& key, int fd, std::string peer, bool kernel,
                       TlsCipher cipher)
    : role_(role), fd_(fd), peer_(std::move(peer)), kernel_(kernel), psk_(key.tls_psk()) {
  init(role, cipher);
  if (role == Role::Client) {
    SSL_CTX_set_psk_use_session_callback(ctx_, &TlsSession::use_psk);
  } else {
    SSL_CTX_set_psk_find_session_callback(ctx_, &TlsSession::find_psk);
  }
  finish_init();
}

TlsSession::TlsSession(Role role, const CertCredentials& cert, int fd, std::string peer,
                       bool kernel, TlsCipher cipher)
    : role_(role), fd_(fd), peer_(std::move(peer)), kernel_(kernel), certs_(true),
      peer_name_(cert.peer_name()) {
  init(role, cipher);
  try {
    cert.configure(ctx_);
  } catch (...) {
    SSL_CTX_free(ctx_);
    throw;
  }
  if (role == Role::Server) SSL_CTX_set_alpn_select_cb(ctx_, &TlsSession::select_alpn, this);
  finish_init();
  try {
    cert.configure(ssl_);
  } catch (...) {
    SSL_free(ssl_);
    SSL_CTX_free(ctx_);
    throw;
  }
}

void TlsSession::set_identity(std::string identity) {
  identity_ = std::move(identity);
  if (!certs_) return;
  // ALPN's wire form: one length byte, then the protocol name.
  if (identity_.empty() || identity_.size() > 255) throw Error("TLS identity too long for ALPN");
  std::string wire(1, static_cast<char>(identity_.size()));
  wire += identity_;
  if (SSL_set_alpn_protos(ssl_, reinterpret_cast<const unsigned char*>(wire.data()),
                          static_cast<unsigned>(wire.size())) != 0) {
    ERR_clear_error();
    throw Error("OpenSSL refused the migration's ALPN identity");
  }
}

int TlsSession::select_alpn(SSL*, const unsigned char** out, unsigned char* outlen,
                            const unsigned char* in, unsigned int inlen, void* arg) {
  auto* self = static_cast<TlsSession*>(arg);
  const std::string prefix = std::string(kIdentityPrefix) + " ";
  for (unsigned int i = 0; i < inlen;) {
    unsigned int len = in[i];
    if (len == 0 || i + 1 + len > inlen) break;
    std::string proto(reinterpret_cast<const char*>(in + i + 1), len);
    if (proto.rfind(prefix, 0) == 0) {
      self->identity_ = proto;
      *out = in + i + 1;
      *outlen = static_cast<unsigned char>(len);
      return SSL_TLSEXT_ERR_OK;
    }
    i += 1 + len;
  }
  self->unknown_identity_ = true;
  return SSL_TLSEXT_ERR_ALERT_FATAL;  // no_application_protocol
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
  const SSL_CIPHER* cipher = SSL_CIPHER_find(ssl_, kPskCipherId);
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

// With certificates: the channel and session the handshake agreed on.
void TlsSession::check_alpn() {
  const unsigned char* sel = nullptr;
  unsigned int len = 0;
  SSL_get0_alpn_selected(ssl_, &sel, &len);
  std::string chosen = sel ? std::string(reinterpret_cast<const char*>(sel), len) : "";
  if (role_ == Role::Client ? chosen != identity_ : identity_.empty()) {
    throw Error("authentication failed: " + peer_ +
                    " did not agree on the migration channel in the TLS handshake",
                Cause::Permission);
  }
}

// With certificates: a refusal of the peer's certificate by this end, or
// of ours by the peer (its alert), as one line. Returns when it is neither.
void TlsSession::fail_certificate(int reason) {
  if (reason == SSL_R_CERTIFICATE_VERIFY_FAILED) {
    long v = SSL_get_verify_result(ssl_);
    std::string why = X509_verify_cert_error_string(v);
    if (v == X509_V_ERR_HOSTNAME_MISMATCH || v == X509_V_ERR_IP_ADDRESS_MISMATCH) {
      why = "it is not issued to " + peer_name_ + " (--tls-peer-name)";
    } else {
      why += " (check --tls-ca here and --tls-cert there)";
    }
    throw Error("authentication failed: the certificate of " + peer_ + " was refused: " + why,
                Cause::Permission);
  }
  if (reason == SSL_R_PEER_DID_NOT_RETURN_A_CERTIFICATE) {
    throw Error("authentication failed: " + peer_ + " sent no certificate", Cause::Permission);
  }
  // An alert from the peer: reason = 1000 + its description.
  int alert = reason - SSL_AD_REASON_OFFSET;
  switch (alert) {
    case SSL_AD_BAD_CERTIFICATE:
    case SSL_AD_UNSUPPORTED_CERTIFICATE:
    case SSL_AD_CERTIFICATE_REVOKED:
    case SSL_AD_CERTIFICATE_EXPIRED:
    case SSL_AD_CERTIFICATE_UNKNOWN:
    case SSL_AD_UNKNOWN_CA:
    case SSL_AD_ACCESS_DENIED:
    case SSL_AD_DECRYPT_ERROR:
    case SSL_AD_CERTIFICATE_REQUIRED:
      throw Error("authentication failed: " + peer_ + " refused our certificate (" +
                      SSL_alert_desc_string_long(alert) + "; check --tls-cert here and --tls-ca there)",
                  Cause::Permission);
    case SSL_AD_NO_APPLICATION_PROTOCOL:
      throw Error("authentication failed: " + peer_ +
                      " is not a crx migration peer (no migration channel in its TLS handshake)",
                  Cause::Permission);
    default:
      break;
  }
}

void TlsSession::fail(const char* what, int ssl_error) {
  int sys = errno;
  auto [reason, text] = take_ssl_error();
  if (ssl_error == SSL_ERROR_SYSCALL && text.empty()) {
    if (sys == 0) throw Error(peer_ + " closed the connection during the TLS " + what);
    throw_errno(std::string("TLS ") + what + " with " + peer_, sys);
  }
  if (certs_) {
    if (unknown_identity_) {
      throw Error("authentication failed: " + peer_ +
                      " is not a crx migration peer (no migration channel in its TLS handshake)",
                  Cause::Permission);
    }
    fail_certificate(reason);
  }
  if (!certs_ && reason == SSL_R_BINDER_DOES_NOT_VERIFY) {
    throw Error("authentication failed: " + peer_ +
                    " does not know the migration key (check the key file on both hosts)",
                Cause::Permission);
  }
  // OpenSSL's server answers a bad PSK binder with illegal_parameter
  // (3.0) or decrypt_error: in this PSK-only handshake, the key differs.
  if (!certs_ &&
      (reason == SSL_R_TLSV1_ALERT_DECRYPT_ERROR || reason == SSL_R_SSLV3_ALERT_ILLEGAL_PARAMETER) &&
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
  if (r == 1) {
    if (certs_) check_alpn();
    return TlsIo::Done;
  }
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
    install_kernel_tls_rx(fd_, peer_secret_, 0, negotiated());
  }
  OPENSSL_cleanse(peer_secret_.data(), peer_secret_.size());
  set_nonblocking(fd_, false);
}

TlsCipher TlsSession::negotiated() const {
  const SSL_CIPHER* c = ssl_ ? SSL_get_current_cipher(ssl_) : nullptr;
  auto cipher = c ? tls_cipher_of_suite(SSL_CIPHER_get_protocol_id(c)) : std::nullopt;
  if (!cipher) throw Error("TLS: no cipher suite agreed on yet", Cause::Invalid);
  return *cipher;
}

}  // namespace crx::migrate
