#include "migrate/kernel_tls.hpp"

#include <linux/tls.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>

#include "common/error.hpp"
#include "common/unique_fd.hpp"

namespace crx::migrate {
namespace {

constexpr char kNoModule[] =
    "this kernel has no TLS support for sockets (the tls module: modprobe tls)";

void set_tls_ulp(int fd) {
  if (::setsockopt(fd, IPPROTO_TCP, TCP_ULP, "tls", sizeof "tls") == 0) return;
  if (errno == EEXIST) return;  // OpenSSL made it a TLS socket for sending
  if (errno == ENOENT) throw Error(kNoModule, Cause::Unsupported, ENOENT);
  throw_errno("switch the page channel to kernel TLS");
}

}  // namespace

bool kernel_tls_available(std::string* why) {
  // An unconnected TCP socket: the tls module (autoloaded for root) refuses
  // it with ENOTCONN; a kernel without it says ENOENT.
  UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!fd) {
    if (why) *why = std::string("socket: ") + std::strerror(errno);
    return false;
  }
  if (::setsockopt(fd.get(), IPPROTO_TCP, TCP_ULP, "tls", sizeof "tls") == 0 || errno == ENOTCONN)
    return true;
  if (why) *why = errno == ENOENT ? kNoModule : std::string("TCP_ULP tls: ") + std::strerror(errno);
  return false;
}

std::string hkdf_expand_label_sha256(std::string_view secret, std::string_view label,
                                     size_t length) {
  if (length > 32) throw Error("hkdf_expand_label_sha256: at most 32 bytes");
  // HkdfLabel: uint16 length, opaque label<7..255> = "tls13 " + label,
  // opaque context<0..255> = "". One HMAC block: T(1) = HMAC(secret, info | 1).
  std::string full = "tls13 " + std::string(label);
  std::string info;
  info.push_back(static_cast<char>(length >> 8));
  info.push_back(static_cast<char>(length & 0xff));
  info.push_back(static_cast<char>(full.size()));
  info += full;
  info.push_back('\0');
  info.push_back('\1');
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  if (!HMAC(EVP_sha256(), secret.data(), static_cast<int>(secret.size()),
            reinterpret_cast<const unsigned char*>(info.data()), info.size(), out, &n))
    throw Error("HKDF-Expand-Label failed in OpenSSL");
  return std::string(reinterpret_cast<char*>(out), length);
}

namespace {

// The kernel's struct for a suite: key and IV from the traffic secret
// (RFC 8446 7.3), the record sequence big-endian. TLS 1.3's 12-byte IV
// is, for AES-GCM, what the kernel calls the 4-byte salt and an 8-byte IV.
template <typename Info>
void fill_crypto_info(Info& ci, uint16_t type, std::string_view secret, uint64_t seq) {
  std::string key = hkdf_expand_label_sha256(secret, "key", sizeof ci.key);
  std::string iv = hkdf_expand_label_sha256(secret, "iv", 12);
  ci.info.version = TLS_1_3_VERSION;
  ci.info.cipher_type = type;
  if constexpr (sizeof ci.iv == 12) {
    std::memcpy(ci.iv, iv.data(), 12);
  } else {
    static_assert(sizeof ci.salt + sizeof ci.iv == 12);
    std::memcpy(ci.salt, iv.data(), sizeof ci.salt);
    std::memcpy(ci.iv, iv.data() + sizeof ci.salt, sizeof ci.iv);
  }
  std::memcpy(ci.key, key.data(), sizeof ci.key);
  for (int i = 7; i >= 0; --i, seq >>= 8) ci.rec_seq[i] = static_cast<unsigned char>(seq & 0xff);
  OPENSSL_cleanse(key.data(), key.size());
  OPENSSL_cleanse(iv.data(), iv.size());
}

template <typename Info>
void install_rx(int fd, uint16_t type, std::string_view secret, uint64_t seq) {
  Info ci{};
  fill_crypto_info(ci, type, secret, seq);
  set_tls_ulp(fd);
  int r = ::setsockopt(fd, SOL_TLS, TLS_RX, &ci, sizeof ci);
  int err = errno;
  OPENSSL_cleanse(&ci, sizeof ci);
  if (r != 0) throw_errno("give the page channel's receiving key to the kernel (TLS_RX)", err);
}

}  // namespace

void install_kernel_tls_rx(int fd, std::string_view traffic_secret, uint64_t seq,
                           TlsCipher cipher) {
  if (traffic_secret.size() != 32)
    throw Error("page channel: no TLS traffic secret to give the kernel", Cause::Unsupported);
  switch (cipher) {
    case TlsCipher::Aes128Gcm:
      return install_rx<tls12_crypto_info_aes_gcm_128>(fd, TLS_CIPHER_AES_GCM_128,
                                                       traffic_secret, seq);
    case TlsCipher::Chacha20Poly1305:
      return install_rx<tls12_crypto_info_chacha20_poly1305>(fd, TLS_CIPHER_CHACHA20_POLY1305,
                                                             traffic_secret, seq);
    case TlsCipher::Auto:
      break;
  }
  throw Error("page channel: no cipher negotiated to give the kernel", Cause::Unsupported);
}

}  // namespace crx::migrate
