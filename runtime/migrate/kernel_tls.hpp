// Kernel TLS (the `tls` module, "kTLS") for the page channel: once the
// TLS 1.3 handshake is done in OpenSSL, the socket's records are sealed and
// opened by the kernel, so CRIU reads and writes clear text on the fd while
// the wire carries AES-GCM or ChaCha20-Poly1305 records (tls_cipher.hpp).
//
// OpenSSL 3.0 (Debian 12) switches only the sending direction of a TLS 1.3
// connection to the kernel (SSL_OP_ENABLE_KTLS; ssl/tls13_enc.c skips the
// receiving one), so the receiving key is installed here: derived from the
// peer's application traffic secret (RFC 8446 7.3) and handed to the
// kernel with setsockopt(SOL_TLS, TLS_RX).
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

#include "migrate/tls_cipher.hpp"

namespace crx::migrate {

// Whether this kernel can do TLS on TCP sockets (loads the module when
// needed, as root may). *why says what is missing when it cannot.
bool kernel_tls_available(std::string* why = nullptr);

// HKDF-Expand-Label(secret, label, "", length) with SHA-256 (RFC 8446
// 7.1); length <= 32.
std::string hkdf_expand_label_sha256(std::string_view secret, std::string_view label,
                                     size_t length);

// Installs the receiving direction of the TLS 1.3 suite `cipher` (not
// Auto) on a TCP socket whose TCP_ULP is "tls" already (OpenSSL set it for
// sending) or can be made so: key and IV from the peer's traffic secret,
// record sequence number `seq` (application records read so far). Throws
// Error.
void install_kernel_tls_rx(int fd, std::string_view traffic_secret, uint64_t seq,
                           TlsCipher cipher);

}  // namespace crx::migrate
