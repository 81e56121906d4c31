#include "migrate/tls_cipher.hpp"

#include <linux/if_alg.h>
#include <sys/socket.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <cstring>
#include <mutex>
#include <vector>

#include "common/error.hpp"
#include "common/unique_fd.hpp"

namespace crx::migrate {
namespace {

struct Suite {
  TlsCipher cipher;
  const char* setting;  // config spelling
  const char* iana;
  uint16_t id;
  const char* kernel_aead;  // the algorithm kTLS allocates for it
  size_t key_bytes;
};

constexpr Suite kSuites[] = {
    {TlsCipher::Aes128Gcm, "aes-128-gcm", "TLS_AES_128_GCM_SHA256", 0x1301, "gcm(aes)", 16},
    {TlsCipher::Chacha20Poly1305, "chacha20-poly1305", "TLS_CHACHA20_POLY1305_SHA256", 0x1303,
     "rfc7539(chacha20,poly1305)", 32},
};

const Suite& suite(TlsCipher c) {
  for (const Suite& s : kSuites)
    if (s.cipher == c) return s;
  throw Error("no TLS suite for the automatic cipher setting");
}

constexpr size_t kRecord = 16384;  // TLS's largest record, what kTLS seals
constexpr size_t kIvBytes = 12;
constexpr size_t kTagBytes = 16;

// One AEAD operation on an AF_ALG op socket: encrypt `in`, read the
// ciphertext and tag into `out`. False on any error.
bool seal_once(int op, const std::vector<char>& in, std::vector<char>& out) {
  char control[CMSG_SPACE(sizeof(int)) + CMSG_SPACE(sizeof(af_alg_iv) + kIvBytes) +
               CMSG_SPACE(sizeof(uint32_t))] = {};
  iovec iov{const_cast<char*>(in.data()), in.size()};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  cmsghdr* c = CMSG_FIRSTHDR(&msg);
  c->cmsg_level = SOL_ALG;
  c->cmsg_type = ALG_SET_OP;
  c->cmsg_len = CMSG_LEN(sizeof(int));
  int opcode = ALG_OP_ENCRYPT;
  std::memcpy(CMSG_DATA(c), &opcode, sizeof opcode);
  c = CMSG_NXTHDR(&msg, c);
  c->cmsg_level = SOL_ALG;
  c->cmsg_type = ALG_SET_IV;
  c->cmsg_len = CMSG_LEN(sizeof(af_alg_iv) + kIvBytes);
  uint32_t ivlen = kIvBytes;
  std::memcpy(CMSG_DATA(c), &ivlen, sizeof ivlen);  // af_alg_iv.ivlen, then a zero IV
  c = CMSG_NXTHDR(&msg, c);
  c->cmsg_level = SOL_ALG;
  c->cmsg_type = ALG_SET_AEAD_ASSOCLEN;
  c->cmsg_len = CMSG_LEN(sizeof(uint32_t));
  uint32_t assoc = 0;
  std::memcpy(CMSG_DATA(c), &assoc, sizeof assoc);
  if (::sendmsg(op, &msg, 0) != static_cast<ssize_t>(in.size())) return false;
  return ::read(op, out.data(), out.size()) == static_cast<ssize_t>(out.size());
}

double thread_cpu_seconds() {
  timespec ts{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

}  // namespace

TlsCipher parse_tls_cipher(std::string_view text, std::string_view what) {
  if (text == "auto") return TlsCipher::Auto;
  for (const Suite& s : kSuites)
    if (text == s.setting) return s.cipher;
  throw Error(std::string(what) + ": unknown TLS cipher \"" + std::string(text) +
                  "\" (auto, aes-128-gcm or chacha20-poly1305)",
              Cause::Invalid);
}

const char* tls_cipher_name(TlsCipher c) {
  return c == TlsCipher::Auto ? "auto" : suite(c).setting;
}

const char* tls13_suite_name(TlsCipher c) { return suite(c).iana; }
uint16_t tls13_suite_id(TlsCipher c) { return suite(c).id; }

std::optional<TlsCipher> tls_cipher_of_suite(uint16_t id) {
  for (const Suite& s : kSuites)
    if (s.id == id) return s.cipher;
  return std::nullopt;
}

bool release_has_ktls_chacha(std::string_view release) {
  int major = 0, minor = 0;
  const char* end = release.data() + release.size();
  auto [p, ec] = std::from_chars(release.data(), end, major);
  if (ec != std::errc() || p == end || *p != '.') return false;
  if (std::from_chars(p + 1, end, minor).ec != std::errc()) return false;
  return major > 5 || (major == 5 && minor >= 11);
}

std::string tls13_ciphersuites(TlsCipher setting) {
  if (setting != TlsCipher::Auto) return suite(setting).iana;
  static const bool chacha_in_ktls = [] {
    utsname u{};
    return ::uname(&u) == 0 && release_has_ktls_chacha(u.release);
  }();
  if (!chacha_in_ktls) return suite(TlsCipher::Aes128Gcm).iana;
  TlsCipher first = faster_kernel_cipher();
  TlsCipher second =
      first == TlsCipher::Aes128Gcm ? TlsCipher::Chacha20Poly1305 : TlsCipher::Aes128Gcm;
  return std::string(suite(first).iana) + ":" + suite(second).iana;
}

TlsCipher faster_cipher(std::optional<double> aes_gcm, std::optional<double> chacha20) {
  if (aes_gcm && chacha20 && *chacha20 > *aes_gcm) return TlsCipher::Chacha20Poly1305;
  return TlsCipher::Aes128Gcm;
}

std::optional<double> kernel_aead_bytes_per_second(TlsCipher c, size_t bytes) {
  const Suite& s = suite(c);
  UniqueFd tfm(::socket(AF_ALG, SOCK_SEQPACKET | SOCK_CLOEXEC, 0));
  if (!tfm) return std::nullopt;
  sockaddr_alg sa{};
  sa.salg_family = AF_ALG;
  std::strncpy(reinterpret_cast<char*>(sa.salg_type), "aead", sizeof sa.salg_type - 1);
  std::strncpy(reinterpret_cast<char*>(sa.salg_name), s.kernel_aead, sizeof sa.salg_name - 1);
  std::vector<char> key(s.key_bytes, 0x5a);
  if (::bind(tfm.get(), reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0 ||
      ::setsockopt(tfm.get(), SOL_ALG, ALG_SET_KEY, key.data(), key.size()) != 0 ||
      ::setsockopt(tfm.get(), SOL_ALG, ALG_SET_AEAD_AUTHSIZE, nullptr, kTagBytes) != 0)
    return std::nullopt;
  UniqueFd op(::accept4(tfm.get(), nullptr, nullptr, SOCK_CLOEXEC));
  if (!op) return std::nullopt;
  std::vector<char> in(kRecord, 0x33), out(kRecord + kTagBytes);
  if (!seal_once(op.get(), in, out)) return std::nullopt;  // warm: module loaded, tfm set up
  const size_t records = std::max<size_t>(1, bytes / kRecord);
  // This thread's CPU time, not the wall clock: AF_ALG seals in the
  // caller's context, and a wall-clock run that lost the CPU to another
  // task (an MPI rank polling on the same core) once turned the choice
  // around.
  double start = thread_cpu_seconds();
  for (size_t i = 0; i < records; ++i)
    if (!seal_once(op.get(), in, out)) return std::nullopt;
  double took = thread_cpu_seconds() - start;
  if (took <= 0) return std::nullopt;
  return static_cast<double>(records * kRecord) / took;
}

TlsCipher faster_kernel_cipher() {
  static std::once_flag once;
  static TlsCipher chosen = TlsCipher::Aes128Gcm;
  std::call_once(once, [] {
    // Twice each, interleaved, the better run counting: one run can lose
    // the CPU to another task.
    constexpr size_t kBytes = 256 * 1024;
    std::optional<double> aes, chacha;
    for (int round = 0; round < 2; ++round) {
      auto a = kernel_aead_bytes_per_second(TlsCipher::Aes128Gcm, kBytes);
      auto c = kernel_aead_bytes_per_second(TlsCipher::Chacha20Poly1305, kBytes);
      if (a) aes = std::max(aes.value_or(0), *a);
      if (c) chacha = std::max(chacha.value_or(0), *c);
    }
    chosen = faster_cipher(aes, chacha);
  });
  return chosen;
}

}  // namespace crx::migrate
