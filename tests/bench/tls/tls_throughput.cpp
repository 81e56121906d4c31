// One pass of the page connection's throughput benchmark (bench_tls.py
// runs it; README.md says why it is built this way).
//
// A sender thread and a receiver thread, each in its own network namespace
// (--client-netns / --server-netns; both empty: this one, loopback), open
// one TCP connection, set it up the way crx sets up a migration's page
// channel, and move --bytes of page data from sender to receiver. Modes:
//
//   clear       crx's clear-text handshake (WireSecurity::Plaintext, channel
//               "pages"), the fd released as crx hands it to CRIU
//               (--insecure-plaintext).
//   ktls        crx's TLS handshake (TlsSession in OpenSSL), then
//               FrameConn::release_fd switches both ends to kernel TLS:
//               what crx does by default.
//   ktls-relay  ktls, and the receiver reads through crx's PageRelay (what
//               crx's destination puts between the kTLS socket and CRIU).
//   user-tls    a TlsSession (OpenSSL 3.0, same PSK, cipher and settings)
//               kept in user space: SSL_write_ex / SSL_read_ex for every
//               byte. Not a crx path: the reference point kTLS replaces.
//
// The sender moves pages as CRIU's dump side does (criu/page-xfer.c):
// vmsplice(2) of page-aligned memory into a pipe, splice(2) from the pipe
// into the socket with SPLICE_F_MOVE. In user-tls there is no fd to
// splice into: SSL_write_ex from the same memory. The receiver read(2)s
// into a buffer in every mode (SSL_read_ex in user-tls) and checks one
// word per 4 KiB page of the stream; at the end it answers one byte, and
// the sender's clock stops when that byte arrives (the handshake is not
// timed).
//
// Prints one JSON line: mode, bytes, seconds, MiB/s, how each side moved
// the data, the CPU seconds of the sending and receiving threads and of
// the whole process (with PageRelay's thread) while the clock ran. Exits
// 1 with one line on error.
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/uio.h>
#include <unistd.h>

#include <chrono>
#include <cerrno>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <functional>
#include <future>
#include <memory>
#include <string>
#include <string_view>

#include "common/error.hpp"
#include "common/unique_fd.hpp"
#include "migrate/auth.hpp"
#include "migrate/frame.hpp"
#include "migrate/net.hpp"
#include "migrate/page_relay.hpp"
#include "migrate/tls_session.hpp"

namespace {

using namespace crx;
using namespace crx::migrate;
using namespace std::chrono_literals;

constexpr size_t kPage = 4096;
constexpr size_t kChunk = 1 << 20;     // one vmsplice / SSL_write: 256 pages
constexpr size_t kRecvBuf = 256 << 10;  // the receiver's read size
constexpr char kSession[] = "be0c";

enum class Mode { Clear, Ktls, KtlsRelay, UserTls };

struct Options {
  Mode mode = Mode::Clear;
  std::string mode_name;
  // The TLS suite, one setting on both ends (not auto: a mode's numbers
  // must not depend on what this kernel measures fastest).
  TlsCipher cipher = TlsCipher::Aes128Gcm;
  uint64_t bytes = 1ull << 30;
  std::string server_netns, client_netns;
  std::string server_addr = "127.0.0.1";
  int port = 0;
};

const SharedKey& key() {
  static SharedKey k = SharedKey::from_bytes("crx-bench-tls-0123456789abcdef");
  return k;
}

// The page data: one chunk of pseudo-random bytes, page-aligned (vmsplice
// takes whole pages), repeated for the whole stream.
uint64_t word_at(uint64_t stream_offset) {
  uint64_t x = (stream_offset % kChunk) / 8 + 0x9e3779b97f4a7c15ull;
  x ^= x >> 31;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 29;
  return x;
}

char* make_pages() {
  void* p = ::mmap(nullptr, kChunk, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw_errno("mmap the page buffer");
  auto* w = static_cast<uint64_t*>(p);
  for (size_t i = 0; i < kChunk / 8; ++i) w[i] = word_at(i * 8);
  return static_cast<char*>(p);
}

void enter_netns(const std::string& name) {
  if (name.empty()) return;
  std::string path = "/run/netns/" + name;
  UniqueFd ns(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!ns) throw_errno("open " + path);
  if (::setns(ns.get(), CLONE_NEWNET) != 0) throw_errno("setns " + path);  // this thread only
}

void set_blocking(int fd) {
  int flags = ::fcntl(fd, F_GETFL);
  if (flags < 0 || ::fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0) throw_errno("fcntl");
}

double cpu_seconds(int who) {
  rusage ru{};
  ::getrusage(who, &ru);
  auto s = [](const timeval& t) { return static_cast<double>(t.tv_sec) + t.tv_usec / 1e6; };
  return s(ru.ru_utime) + s(ru.ru_stime);
}

// A TlsSession's non-blocking calls, waited out with poll().
void tls_wait(int fd, TlsIo r) {
  pollfd p{fd, static_cast<short>(r == TlsIo::WantWrite ? POLLOUT : POLLIN), 0};
  if (::poll(&p, 1, 60000) != 1) throw Error("TLS: no progress for 60 s");
}

void tls_handshake(TlsSession& s, int fd) {
  for (TlsIo r; (r = s.handshake()) != TlsIo::Done;) tls_wait(fd, r);
}

void tls_write_all(TlsSession& s, int fd, const char* data, size_t len) {
  while (len > 0) {
    size_t n = 0;
    TlsIo r = s.write(data, len, &n);
    if (r == TlsIo::Done) {
      data += n;
      len -= n;
    } else {
      tls_wait(fd, r);
    }
  }
}

// Some bytes (blocking); 0 at the end of the stream.
size_t tls_read_some(TlsSession& s, int fd, char* data, size_t len) {
  for (;;) {
    size_t n = 0;
    TlsIo r = s.read(data, len, &n);
    if (r == TlsIo::Done) return n;
    if (r == TlsIo::Eof) return 0;
    tls_wait(fd, r);
  }
}

// One end's connection: a plain fd (clear, kTLS) or a TlsSession on it.
struct End {
  UniqueFd fd;
  std::unique_ptr<TlsSession> tls;
  std::unique_ptr<PageRelay> relay;  // ktls-relay, receiver: fd is the relay's peer end
};

Credentials credentials(const Options& o) {
  return {o.mode == Mode::Clear ? WireSecurity::Plaintext : WireSecurity::Tls, &key(), nullptr,
          o.cipher};
}

End connect_sender(const Options& o, int port) {
  UniqueFd fd = connect_tcp(parse_host_port(o.server_addr + ":" + std::to_string(port)), 10s);
  End e;
  if (o.mode == Mode::UserTls) {
    e.tls = std::make_unique<TlsSession>(TlsSession::Role::Client, key(), fd.get(), "receiver",
                                         false, o.cipher);
    e.tls->set_identity(std::string(TlsSession::kIdentityPrefix) + " bench " + kSession);
    tls_handshake(*e.tls, fd.get());
    e.fd = std::move(fd);
    return e;
  }
  FrameConn c(std::move(fd), "receiver");
  c.set_timeout(30s);
  authenticate_as_client(c, credentials(o), "pages", kSession);
  e.fd = c.release_fd();  // TLS: now kernel TLS
  set_blocking(e.fd.get());
  return e;
}

End accept_receiver(const Options& o, TcpListener& server) {
  UniqueFd fd = server.accept(30s);
  End e;
  if (o.mode == Mode::UserTls) {
    e.tls = std::make_unique<TlsSession>(TlsSession::Role::Server, key(), fd.get(), "sender",
                                         false, o.cipher);
    tls_handshake(*e.tls, fd.get());
    e.fd = std::move(fd);
    return e;
  }
  FrameConn c(std::move(fd), "sender");
  c.set_timeout(30s);
  AuthPeer who = authenticate_as_server(c, credentials(o));
  if (who.channel != "pages") throw Error("the sender opened channel " + who.channel);
  e.fd = c.release_fd();
  set_blocking(e.fd.get());
  if (o.mode == Mode::KtlsRelay) {
    e.relay = std::make_unique<PageRelay>(std::move(e.fd));
    e.fd = e.relay->take_peer_end();
  }
  return e;
}

struct SendResult {
  double seconds = 0, cpu = 0, process_cpu = 0;
};

// CRIU's way: pages into a pipe with vmsplice, the pipe into the socket
// with splice(SPLICE_F_MOVE). The buffer is never written again, so its
// pages may stay referenced by the pipe or the socket.
void splice_pages(int sock, const char* pages, uint64_t total) {
  int p[2];
  if (::pipe2(p, O_CLOEXEC) != 0) throw_errno("pipe2");
  UniqueFd pr(p[0]), pw(p[1]);
  if (::fcntl(pw.get(), F_SETPIPE_SZ, static_cast<int>(kChunk)) < static_cast<int>(kChunk))
    throw_errno("F_SETPIPE_SZ to 1 MiB");
  uint64_t sent = 0;
  while (sent < total) {
    size_t len = static_cast<size_t>(std::min<uint64_t>(kChunk, total - sent));
    size_t in = 0;
    while (in < len) {
      iovec iov{const_cast<char*>(pages) + in, len - in};
      ssize_t n = ::vmsplice(pw.get(), &iov, 1, 0);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) throw_errno("vmsplice into the page pipe");
      in += static_cast<size_t>(n);
    }
    while (in > 0) {
      ssize_t n = ::splice(pr.get(), nullptr, sock, nullptr, in, SPLICE_F_MOVE);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) throw_errno("splice into the page socket");
      in -= static_cast<size_t>(n);
    }
    sent += len;
  }
}

SendResult run_sender(const Options& o, int port, const char* pages) {
  enter_netns(o.client_netns);
  End e = connect_sender(o, port);
  double cpu0 = cpu_seconds(RUSAGE_THREAD), all0 = cpu_seconds(RUSAGE_SELF);
  auto t0 = std::chrono::steady_clock::now();
  char ack = 0;
  if (e.tls) {
    for (uint64_t sent = 0; sent < o.bytes;) {
      size_t len = static_cast<size_t>(std::min<uint64_t>(kChunk, o.bytes - sent));
      tls_write_all(*e.tls, e.fd.get(), pages, len);
      sent += len;
    }
    if (tls_read_some(*e.tls, e.fd.get(), &ack, 1) != 1) throw Error("no answer from the receiver");
  } else {
    splice_pages(e.fd.get(), pages, o.bytes);
    ssize_t n;
    while ((n = ::read(e.fd.get(), &ack, 1)) < 0 && errno == EINTR) {
    }
    if (n != 1) throw_errno("no answer from the receiver");
  }
  SendResult r;
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.cpu = cpu_seconds(RUSAGE_THREAD) - cpu0;
  r.process_cpu = cpu_seconds(RUSAGE_SELF) - all0;
  if (ack != 'k') throw Error("wrong answer from the receiver");
  return r;
}

// Every 4 KiB page of the stream starts with word_at(its offset): checked
// where a page's first word falls inside [off, off + len).
void check(const char* data, uint64_t off, size_t len) {
  uint64_t first = (off + kPage - 1) / kPage * kPage;
  for (uint64_t at = first; at + 8 <= off + len; at += kPage) {
    uint64_t w;
    std::memcpy(&w, data + (at - off), 8);
    if (w != word_at(at)) {
      throw Error("the page stream is wrong at byte " + std::to_string(at));
    }
  }
}

double run_receiver(const Options& o, TcpListener& server) {
  End e = accept_receiver(o, server);
  double cpu0 = cpu_seconds(RUSAGE_THREAD);
  std::unique_ptr<char[]> buf(new char[kRecvBuf]);
  uint64_t got = 0;
  while (got < o.bytes) {
    size_t want = static_cast<size_t>(std::min<uint64_t>(kRecvBuf, o.bytes - got));
    size_t n;
    if (e.tls) {
      n = tls_read_some(*e.tls, e.fd.get(), buf.get(), want);
    } else {
      ssize_t r = ::read(e.fd.get(), buf.get(), want);
      if (r < 0 && errno == EINTR) continue;
      if (r < 0) throw_errno("read the page stream");
      n = static_cast<size_t>(r);
    }
    if (n == 0) {
      std::string why = e.relay ? e.relay->error() : "";
      throw Error("the page stream ended after " + std::to_string(got) + " bytes" +
                  (why.empty() ? "" : ": " + why));
    }
    check(buf.get(), got, n);
    got += n;
  }
  double cpu = cpu_seconds(RUSAGE_THREAD) - cpu0;
  if (e.tls) {
    tls_write_all(*e.tls, e.fd.get(), "k", 1);
  } else if (::write(e.fd.get(), "k", 1) != 1) {
    throw_errno("answer the sender");
  }
  if (e.relay) {
    // The sender closes its end after the answer; the relay sees the end
    // of the network stream and then of ours.
    char c;
    while (::read(e.fd.get(), &c, 1) > 0) {
    }
    e.fd.reset();
    e.relay->join();
    if (!e.relay->error().empty()) throw Error("page relay: " + e.relay->error());
    if (e.relay->bytes_from_network() != o.bytes)
      throw Error("page relay carried " + std::to_string(e.relay->bytes_from_network()) +
                  " bytes");
  }
  return cpu;
}

uint64_t parse_size(std::string_view s) {
  char* end = nullptr;
  std::string text(s);
  double v = std::strtod(text.c_str(), &end);
  uint64_t mul = 1;
  std::string suf(end);
  if (suf == "K" || suf == "KiB") mul = 1ull << 10;
  else if (suf == "M" || suf == "MiB") mul = 1ull << 20;
  else if (suf == "G" || suf == "GiB") mul = 1ull << 30;
  else if (!suf.empty()) throw Error("bad size " + text + " (e.g. 1G, 256M, 65536)");
  if (v <= 0) throw Error("bad size " + text);
  return static_cast<uint64_t>(v * static_cast<double>(mul));
}

Options parse(int argc, char** argv) {
  Options o;
  o.mode_name = "";
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto val = [&]() -> std::string {
      if (i + 1 >= argc) throw Error(a + " needs a value");
      return argv[++i];
    };
    if (a == "--mode") o.mode_name = val();
    else if (a == "--bytes") o.bytes = parse_size(val());
    else if (a == "--server-netns") o.server_netns = val();
    else if (a == "--client-netns") o.client_netns = val();
    else if (a == "--server-addr") o.server_addr = val();
    else if (a == "--port") o.port = std::stoi(val());
    else if (a == "--cipher") o.cipher = parse_tls_cipher(val(), "--cipher");
    else
      throw Error("usage: crx_bench_tls --mode clear|ktls|ktls-relay|user-tls [--bytes 1G] "
                  "[--cipher aes-128-gcm|chacha20-poly1305] "
                  "[--server-netns NS --client-netns NS --server-addr IP] [--port N]");
  }
  if (o.mode_name == "clear") o.mode = Mode::Clear;
  else if (o.mode_name == "ktls") o.mode = Mode::Ktls;
  else if (o.mode_name == "ktls-relay") o.mode = Mode::KtlsRelay;
  else if (o.mode_name == "user-tls") o.mode = Mode::UserTls;
  else throw Error("--mode must be clear, ktls, ktls-relay or user-tls");
  if (o.cipher == TlsCipher::Auto) throw Error("--cipher: name one suite");
  return o;
}

}  // namespace

int main(int argc, char** argv) {
  // A receiver that gives up closes its socket: the sender's splice then
  // fails with EPIPE and the receiver's reason is printed.
  ::signal(SIGPIPE, SIG_IGN);
  try {
    Options o = parse(argc, argv);
    const char* pages = make_pages();
    // The listener is made in the receiver's namespace before the sender
    // connects; each thread enters its namespace (setns is per thread).
    std::promise<int> port_p;
    auto port_f = port_p.get_future();
    auto receiver = std::async(std::launch::async, [&]() -> double {
      std::unique_ptr<TcpListener> server;
      try {
        enter_netns(o.server_netns);
        server = std::make_unique<TcpListener>(
            parse_host_port(o.server_addr + ":" + std::to_string(o.port)));
        port_p.set_value(server->port());
      } catch (...) {
        port_p.set_exception(std::current_exception());
        throw;
      }
      return run_receiver(o, *server);
    });
    int port = 0;
    try {
      port = port_f.get();
    } catch (...) {
      receiver.wait();
      throw;
    }
    auto sender = std::async(std::launch::async, [&] { return run_sender(o, port, pages); });
    SendResult s;
    std::exception_ptr send_error;
    try {
      s = sender.get();
    } catch (...) {
      send_error = std::current_exception();
    }
    double recv_cpu = receiver.get();  // its error first: it says more
    if (send_error) std::rethrow_exception(send_error);
    const char* how_sent = o.mode == Mode::UserTls ? "SSL_write" : "vmsplice+splice";
    const char* how_read = o.mode == Mode::UserTls     ? "SSL_read"
                           : o.mode == Mode::KtlsRelay ? "PageRelay+read"
                                                       : "read";
    std::printf(
        "{\"mode\": \"%s\", \"cipher\": \"%s\", \"bytes\": %" PRIu64 ", \"seconds\": %.6f, "
        "\"mib_per_s\": %.3f, \"send\": \"%s\", \"receive\": \"%s\", \"sender_cpu\": %.3f, "
        "\"receiver_cpu\": %.3f, \"process_cpu\": %.3f}\n",
        o.mode_name.c_str(), o.mode == Mode::Clear ? "none" : tls_cipher_name(o.cipher), o.bytes,
        s.seconds,
        static_cast<double>(o.bytes) / (1 << 20) / s.seconds, how_sent, how_read, s.cpu,
        recv_cpu, s.process_cpu);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "crx_bench_tls: %s\n", e.what());
    return 1;
  }
}
