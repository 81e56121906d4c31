// The page channel in kernel TLS (runtime/migrate/kernel_tls.hpp) over
// real TCP on loopback: after the handshake both ends hand the socket to
// the kernel, plain read()/write() (what CRIU does) carry clear text, and a
// byte altered on the wire fails the kernel's check. Skipped where the
// kernel has no tls module (the guests have it: tests/vm/test_host_suite.py
// runs this suite there).
#include <gtest/gtest.h>
#include <linux/tls.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <future>
#include <string>
#include <vector>
#include <algorithm>

#include "../unit/tamper_relay.hpp"
#include "common/error.hpp"
#include "migrate/auth.hpp"
#include "migrate/kernel_tls.hpp"
#include "migrate/net.hpp"
#include "migrate/page_relay.hpp"
#include "migrate/zero_runs.hpp"
#include "migrate/tls_cipher.hpp"
#include "migrate/tls_session.hpp"

namespace {

using namespace crx::migrate;
using namespace std::chrono_literals;

const SharedKey& key() {
  static SharedKey k = SharedKey::from_bytes("0123456789abcdef-ktls-test-key");
  return k;
}

// How long either end waits for the other's next frame in the TLS
// handshake. Not a timing check: a bound for a wedged peer. The suite also
// runs in a TCG guest (vm_host_suite), where a handshake once took over
// 5 s while the host's two cores were busy with a build.
constexpr auto kHandshake = 30s;

struct PageChannel {
  crx::UniqueFd sender, receiver;
  std::unique_ptr<crx::test::TamperRelay> relay;
};

// sender -> relay -> receiver over TCP, authenticated as a "pages" channel
// with TLS (the sender offering `cipher`) and handed over
// (FrameConn::release_fd) on both ends.
PageChannel page_channel(TlsCipher cipher = TlsCipher::Aes128Gcm) {
  TcpListener server(parse_host_port("127.0.0.1:0"));
  TcpListener relay_in(parse_host_port("127.0.0.1:0"));
  PageChannel pc;
  auto relay = std::async(std::launch::async, [&] {
    crx::UniqueFd near = relay_in.accept(10s);
    crx::UniqueFd far = connect_tcp(parse_host_port("127.0.0.1:" + std::to_string(server.port())), 5s);
    pc.relay = std::make_unique<crx::test::TamperRelay>(std::move(near), std::move(far));
  });
  auto rx = std::async(std::launch::async, [&] {
    FrameConn c(server.accept(10s), "sender");
    c.set_timeout(kHandshake);
    AuthPeer who = authenticate_as_server(c, key(), WireSecurity::Tls);
    EXPECT_EQ(who.channel, "pages");
    return c.release_fd();
  });
  FrameConn c(connect_tcp(parse_host_port("127.0.0.1:" + std::to_string(relay_in.port())), 5s),
              "receiver");
  c.set_timeout(kHandshake);
  authenticate_as_client(c, Credentials{WireSecurity::Tls, &key(), nullptr, cipher}, "pages",
                         "5e55");
  pc.sender = c.release_fd();
  pc.receiver = rx.get();
  relay.get();
  return pc;
}

std::string ulp(int fd) {
  char name[16] = {};
  socklen_t len = sizeof name;
  if (::getsockopt(fd, IPPROTO_TCP, TCP_ULP, name, &len) != 0) return "";
  return name;
}

// The kernel hands a key's settings back only into a buffer of the
// cipher's exact size.
template <typename Info = tls12_crypto_info_aes_gcm_128>
bool kernel_has(int fd, int direction, uint16_t type = TLS_CIPHER_AES_GCM_128) {
  Info info{};
  socklen_t len = sizeof info;
  return ::getsockopt(fd, SOL_TLS, direction, &info, &len) == 0 && info.info.cipher_type == type;
}

// What CRIU does: plain write() on one fd, read() on the other; 256 KiB
// arrive as they were written.
void carries_pages(int from, int to) {
  std::string pages(256 * 1024, '\0');
  for (size_t i = 0; i < pages.size(); ++i) pages[i] = static_cast<char>(i * 7);
  auto writer = std::async(std::launch::async, [&] {
    size_t off = 0;
    while (off < pages.size()) {
      ssize_t n = ::write(from, pages.data() + off, pages.size() - off);
      if (n <= 0) return false;
      off += static_cast<size_t>(n);
    }
    return true;
  });
  std::string got(pages.size(), '\0');
  size_t off = 0;
  while (off < got.size()) {
    ssize_t n = ::read(to, got.data() + off, got.size() - off);
    ASSERT_GT(n, 0) << std::strerror(errno);
    off += static_cast<size_t>(n);
  }
  EXPECT_TRUE(writer.get());
  EXPECT_EQ(got, pages);
}

#define SKIP_WITHOUT_KTLS()                                            \
  do {                                                                 \
    std::string why;                                                   \
    if (!kernel_tls_available(&why)) GTEST_SKIP() << "no kernel TLS: " << why; \
  } while (0)

TEST(MigrateKernelTls, BothEndsOfThePageChannelRunInTheKernel) {
  SKIP_WITHOUT_KTLS();
  PageChannel pc = page_channel();
  for (int fd : {pc.sender.get(), pc.receiver.get()}) {
    EXPECT_EQ(ulp(fd), "tls");
    EXPECT_TRUE(kernel_has(fd, TLS_TX)) << "sending key not in the kernel";
    EXPECT_TRUE(kernel_has(fd, TLS_RX)) << "receiving key not in the kernel";
  }
  carries_pages(pc.sender.get(), pc.receiver.get());
  // More than the pages crossed the relay: records, each with its tag.
  EXPECT_GT(pc.relay->forwarded(), 256u * 1024);
  ASSERT_EQ(::write(pc.receiver.get(), "ack!", 4), 4);
  char ack[4];
  ASSERT_EQ(::read(pc.sender.get(), ack, 4), 4);
  EXPECT_EQ(std::string(ack, 4), "ack!");
}

// ChaCha20-Poly1305, the suite auto picks where the kernel has no AES
// hardware (the test bed's TCG guests): both directions in the kernel too.
TEST(MigrateKernelTls, ChachaPageChannelRunsInTheKernelBothWays) {
  SKIP_WITHOUT_KTLS();
  PageChannel pc = page_channel(TlsCipher::Chacha20Poly1305);
  using Chacha = tls12_crypto_info_chacha20_poly1305;
  for (int fd : {pc.sender.get(), pc.receiver.get()}) {
    EXPECT_TRUE((kernel_has<Chacha>(fd, TLS_TX, TLS_CIPHER_CHACHA20_POLY1305)));
    EXPECT_TRUE((kernel_has<Chacha>(fd, TLS_RX, TLS_CIPHER_CHACHA20_POLY1305)));
  }
  carries_pages(pc.sender.get(), pc.receiver.get());
  carries_pages(pc.receiver.get(), pc.sender.get());
}

// A kernel with kTLS has AF_ALG here (the guests' Debian kernel), so auto
// decides on two measurements, not on the fallback.
TEST(MigrateKernelTls, BothSuitesAreMeasuredInThisKernel) {
  SKIP_WITHOUT_KTLS();
  auto aes = kernel_aead_bytes_per_second(TlsCipher::Aes128Gcm, 256 * 1024);
  auto chacha = kernel_aead_bytes_per_second(TlsCipher::Chacha20Poly1305, 256 * 1024);
  ASSERT_TRUE(aes && chacha) << "no AF_ALG measurement";
  EXPECT_GT(*aes, 0);
  EXPECT_GT(*chacha, 0);
  std::printf("kernel AEAD: aes-128-gcm %.1f MB/s, chacha20-poly1305 %.1f MB/s; auto: %s\n",
              *aes / 1e6, *chacha / 1e6, tls_cipher_name(faster_kernel_cipher()));
}

// Flips a byte 1000 bytes into what pc's tamper relay forwards next and
// writes `pages` to the sender from a thread (the caller ends it).
std::future<void> write_flipped(PageChannel& pc, const std::string& pages) {
  pc.relay->tamper_at(pc.relay->forwarded() + 1000, crx::test::TamperRelay::Action::Flip);
  return std::async(std::launch::async, [&pc, &pages] {
    (void)::write(pc.sender.get(), pages.data(), pages.size());
  });
}

// Reads fd until it ends: the last read's result, its errno, bytes read.
struct Drained {
  ssize_t last;
  int err;
  size_t total;
};
Drained drain(int fd) {
  char buf[65536];
  Drained d{0, 0, 0};
  while ((d.last = ::read(fd, buf, sizeof buf)) > 0) d.total += static_cast<size_t>(d.last);
  d.err = errno;
  return d;
}

TEST(MigrateKernelTls, AFlippedByteInThePageStreamFailsTheKernelsCheck) {
  SKIP_WITHOUT_KTLS();
  PageChannel pc = page_channel();
  std::string pages(64 * 1024, 'p');
  auto writer = write_flipped(pc, pages);
  Drained d = drain(pc.receiver.get());
  EXPECT_EQ(d.last, -1);
  EXPECT_EQ(d.err, EBADMSG) << std::strerror(d.err);
  EXPECT_LT(d.total, pages.size()) << "the altered record was delivered";
  pc.receiver.reset();
  writer.get();
}

// What criu page-server does with its socket (criu/page-xfer.c,
// page_server_add): wait for POLLIN, then splice with SPLICE_F_NONBLOCK;
// EAGAIN there ends the page server. On a kTLS socket poll() is true before
// the kernel has a whole record, so this fails there; through the relay's
// unix socket it must not.
ssize_t criu_style_read(int fd, int pipe_w, size_t len) {
  pollfd p{fd, POLLIN, 0};
  if (::poll(&p, 1, 10000) != 1) return -1;
  return ::splice(fd, nullptr, pipe_w, nullptr, len, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
}

// framed: the sender writes the pages in zero_runs.hpp's frames (every
// third page is zeros), the relay writes them back; frames and TLS records
// do not line up, so the relay splices parts of records. compressed: the
// frames sealed 1 MiB at a time as the page filter flushes, compressed
// where LZ4 shrinks them (the pattern repeats every 2 KiB: it does).
void relay_carries_pages(PageRelay::Mode mode, const char* name, bool framed = false,
                         bool compressed = false) {
  PageChannel pc = page_channel();
  PageRelay relay(std::move(pc.receiver), mode, PageRelay::OnEnd::Close,
                  framed ? PageRelay::Framing::ZeroRuns : PageRelay::Framing::None);
  crx::UniqueFd criu = relay.take_peer_end();
  const size_t size = 64u << 20;
  std::string pages(size, '\0');
  // CRIU's pages follow its headers, so they do not start at a multiple
  // of 4096 in the stream: 3 bytes here, then every third page zeros.
  const size_t head = 3;
  for (size_t i = 0; i < size; ++i)
    if (i < head || ((i - head) / 4096) % 3 != 1) pages[i] = static_cast<char>(((i * 131) >> 3) | 1);
  crx::migrate::zero_runs::Encoder encoder(framed, compressed);
  std::string wire;
  encoder.bytes(pages.data(), head);
  size_t off = head;
  for (; off + 4096 <= size; off += 4096) {
    encoder.page(pages.data() + off);
    if (encoder.wire().size() >= (1u << 20)) {
      wire += encoder.seal();
      encoder.clear();
    }
  }
  encoder.bytes(pages.data() + off, size - off);
  wire += encoder.seal();
  EXPECT_EQ(wire.size() < size, framed);
  EXPECT_EQ(encoder.compressed_in() > size / 2, compressed);
  if (compressed) EXPECT_LT(wire.size(), size / 8);
  auto t0 = std::chrono::steady_clock::now();
  auto writer = std::async(std::launch::async, [&] {
    size_t off = 0;
    while (off < wire.size()) {
      ssize_t n = ::write(pc.sender.get(), wire.data() + off, wire.size() - off);
      if (n <= 0) return std::string("write: ") + std::strerror(errno);
      off += static_cast<size_t>(n);
    }
    char ack[4];
    if (::read(pc.sender.get(), ack, 4) != 4 || std::string(ack, 4) != "ack!")
      return std::string("no answer through the relay");
    pc.sender.reset();
    return std::string();
  });
  int p[2];
  ASSERT_EQ(::pipe2(p, O_CLOEXEC), 0);
  crx::UniqueFd pr(p[0]), pw(p[1]);
  std::string got;
  got.reserve(size);
  std::vector<char> buf(64 * 1024);
  while (got.size() < size) {
    ssize_t n = criu_style_read(criu.get(), pw.get(), std::min(buf.size(), size - got.size()));
    ASSERT_GT(n, 0) << "criu's read of the page socket: " << std::strerror(errno);
    ssize_t m = ::read(pr.get(), buf.data(), static_cast<size_t>(n));
    ASSERT_EQ(m, n);
    got.append(buf.data(), static_cast<size_t>(m));
  }
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_EQ(::write(criu.get(), "ack!", 4), 4);  // criu's answer to a flush
  EXPECT_EQ(writer.get(), "");
  EXPECT_EQ(criu_style_read(criu.get(), pw.get(), 4096), 0) << "the end of the stream";
  EXPECT_TRUE(got == pages) << "the pages changed on the way";
  criu.reset();
  relay.join();
  EXPECT_EQ(relay.error(), "");
  EXPECT_EQ(relay.bytes_from_network(), wire.size());
  if (framed) EXPECT_GT(relay.zero_bytes(), size / 4);
  std::printf("page relay (%s asked, %s used%s): 64 MiB in %.3f s, %.0f MiB/s\n", name,
              relay.mode() == PageRelay::Mode::Splice ? "splice" : "read/write",
              compressed ? ", framed and compressed" : framed ? ", framed" : "", secs,
              64 / secs);
}

TEST(MigratePageRelay, CriusReadPatternGetsEveryPageWithSplice) {
  SKIP_WITHOUT_KTLS();
  relay_carries_pages(PageRelay::Mode::Splice, "splice");
}

TEST(MigratePageRelay, CriusReadPatternGetsEveryPageWithReadWrite) {
  SKIP_WITHOUT_KTLS();
  relay_carries_pages(PageRelay::Mode::Copy, "read/write");
}

TEST(MigratePageRelay, FramedZeroPagesArriveWholeWithSplice) {
  SKIP_WITHOUT_KTLS();
  relay_carries_pages(PageRelay::Mode::Splice, "splice", true);
}

TEST(MigratePageRelay, FramedZeroPagesArriveWholeWithReadWrite) {
  SKIP_WITHOUT_KTLS();
  relay_carries_pages(PageRelay::Mode::Copy, "read/write", true);
}

TEST(MigratePageRelay, CompressedFramesArriveWholeWithSplice) {
  SKIP_WITHOUT_KTLS();
  relay_carries_pages(PageRelay::Mode::Splice, "splice", true, true);
}

TEST(MigratePageRelay, AFlippedByteEndsTheRelayWithAnIntegrityError) {
  SKIP_WITHOUT_KTLS();
  PageChannel pc = page_channel();
  EXPECT_TRUE(is_kernel_tls_socket(pc.receiver.get()));
  PageRelay relay(std::move(pc.receiver));
  crx::UniqueFd criu = relay.take_peer_end();
  EXPECT_FALSE(is_kernel_tls_socket(criu.get()));
  std::string pages(64 * 1024, 'p');
  auto writer = write_flipped(pc, pages);
  Drained d = drain(criu.get());
  EXPECT_EQ(d.last, 0) << "criu sees the end of its socket";
  EXPECT_LT(d.total, pages.size()) << "the altered record was delivered";
  relay.join();
  EXPECT_NE(relay.error().find("integrity"), std::string::npos) << relay.error();
  pc.sender.reset();
  writer.get();
}

TEST(MigratePageRelay, StopEndsARelayWaitingForPages) {
  SKIP_WITHOUT_KTLS();
  PageChannel pc = page_channel();
  PageRelay relay(std::move(pc.receiver));
  crx::UniqueFd criu = relay.take_peer_end();
  relay.stop();  // nothing was sent: the thread is in poll()
  EXPECT_EQ(relay.error(), "");
  char c;
  EXPECT_EQ(::read(criu.get(), &c, 1), 0) << "criu sees the end of its socket";
}

}  // namespace
