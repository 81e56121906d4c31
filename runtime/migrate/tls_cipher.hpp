// Which TLS 1.3 cipher suite the migration's connections use.
//
// Both suites crx offers have SHA-256 as their hash (so the shared key's
// PSK fits either) and a kernel TLS implementation since Linux 5.11:
//
//   TLS_AES_128_GCM_SHA256        fast where the CPU has AES and
//                                 carry-less multiply instructions the
//                                 kernel uses (aesni_intel, ARMv8 CE);
//   TLS_CHACHA20_POLY1305_SHA256  fast in plain integer code: 3-4x AES-GCM
//                                 where the kernel has no AES hardware
//                                 driver (aes-generic), or under an
//                                 emulator (the test bed's TCG guests).
//
// "auto" (the default) lets the kernel that will seal the pages decide:
// the faster of the two in a short AF_ALG run of the same kernel
// implementations kTLS uses, once per process. A kernel older than 5.11
// has no ChaCha20 in kTLS: auto then offers and accepts AES-GCM only. The connecting side (crx
// migrate) offers its order and the receiver takes the first it allows,
// so the sender's kernel, which encrypts every page, picks. A setting of
// one suite offers (or accepts) only that one.
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace crx::migrate {

enum class TlsCipher { Auto, Aes128Gcm, Chacha20Poly1305 };

// "auto", "aes-128-gcm", "chacha20-poly1305" (the config file's and
// --tls-cipher's spelling). Throws Error (Cause::Invalid) naming `what`.
TlsCipher parse_tls_cipher(std::string_view text, std::string_view what);
const char* tls_cipher_name(TlsCipher c);

// The suite's IANA name ("TLS_AES_128_GCM_SHA256") and two-byte id
// (0x1301, 0x1303); c is not Auto.
const char* tls13_suite_name(TlsCipher c);
uint16_t tls13_suite_id(TlsCipher c);
// The cipher of a suite id, or nullopt for a suite crx does not offer.
std::optional<TlsCipher> tls_cipher_of_suite(uint16_t id);

// OpenSSL's TLS 1.3 ciphersuites string for `setting`: the preferred suite
// first (Auto: faster_kernel_cipher(); AES-GCM alone on a kernel without
// ChaCha20 in kTLS), or the one suite a setting names.
std::string tls13_ciphersuites(TlsCipher setting);

// The faster of two measured throughputs (bytes per second); AES-GCM when
// either is unknown (no AF_ALG), the suite every kTLS kernel has.
TlsCipher faster_cipher(std::optional<double> aes_gcm, std::optional<double> chacha20);

// This kernel's AEAD throughput for the cipher (AF_ALG, `bytes` sealed in
// 16 KiB records, kTLS's record size, per second of the calling thread's
// CPU time), or nullopt when the kernel cannot say (no AF_ALG, no such
// algorithm).
std::optional<double> kernel_aead_bytes_per_second(TlsCipher c, size_t bytes);

// Whether a kernel of this release (uname -r, "6.1.0-56-amd64") has
// ChaCha20-Poly1305 in kTLS: 5.11 or later.
bool release_has_ktls_chacha(std::string_view release);

// faster_cipher() of the two kernel measurements, measured on first use
// (about 20 ms under the test bed's emulator, well under 1 ms on hardware).
TlsCipher faster_kernel_cipher();

}  // namespace crx::migrate
