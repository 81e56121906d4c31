#include "migrate/page_relay.hpp"

#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include "common/error.hpp"
#include "common/log.hpp"
#include "common/retry_eintr.hpp"
#include "migrate/zero_runs.hpp"

#ifndef TCP_ULP
#define TCP_ULP 31
#endif

namespace crx::migrate {

namespace {

constexpr size_t kChunk = 64 * 1024;  // a default pipe's capacity; four TLS records

// Writes all of data to a socket; false with errno set on failure.
bool send_all(int fd, const char* data, size_t len) {
  while (len > 0) {
    ssize_t n = retry_eintr([&] { return ::send(fd, data, len, MSG_NOSIGNAL); });
    if (n <= 0) return false;
    data += n;
    len -= static_cast<size_t>(n);
  }
  return true;
}

[[noreturn]] void throw_network_error(int err) {
  if (err == EBADMSG)
    throw Error("the page channel failed TLS's integrity check (a record was altered on the way)");
  throw_errno("reading the page channel", err);
}

}  // namespace

bool is_kernel_tls_socket(int fd) {
  char name[16] = {};
  socklen_t len = sizeof name;
  if (::getsockopt(fd, IPPROTO_TCP, TCP_ULP, name, &len) != 0) return false;
  return std::strncmp(name, "tls", sizeof name) == 0;
}

PageRelay::PageRelay(UniqueFd tls_socket, Mode mode, OnEnd on_end, Framing framing)
    : tls_(std::move(tls_socket)), mode_(mode), on_end_(on_end), framing_(framing) {
  int sv[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
    throw_errno("socketpair for the page channel");
  local_ = UniqueFd(sv[0]);
  peer_ = UniqueFd(sv[1]);
  int flags = ::fcntl(tls_.get(), F_GETFL);
  if (flags < 0 || ::fcntl(tls_.get(), F_SETFL, flags & ~O_NONBLOCK) != 0)
    throw_errno("making the page channel blocking");
  thread_ = std::thread([this] { run(); });
}

PageRelay::~PageRelay() { stop(); }

UniqueFd PageRelay::take_peer_end() { return std::move(peer_); }

void PageRelay::stop() {
  stopping_ = true;
  if (thread_.joinable()) {
    {
      // Wakes the thread wherever it blocks: reading or writing either
      // socket. The thread closes the network socket when it ends: only
      // under the lock, so this never shuts down a reused fd number.
      std::lock_guard<std::mutex> lock(mutex_);
      if (tls_) ::shutdown(tls_.get(), SHUT_RDWR);
    }
    ::shutdown(local_.get(), SHUT_RDWR);
    thread_.join();
  }
}

void PageRelay::join() {
  if (thread_.joinable()) thread_.join();
}

std::string PageRelay::error() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return error_;
}

void PageRelay::fail(const std::string& what) {
  if (stopping_) return;  // the owner ended it: not the relay's failure
  std::lock_guard<std::mutex> lock(mutex_);
  if (error_.empty()) error_ = what;
}

size_t PageRelay::move_to_local(int pipe_r, int pipe_w, char* buf, size_t max) {
  if (mode_ == Mode::Splice) {
    ssize_t n = retry_eintr(
        [&] { return ::splice(tls_.get(), nullptr, pipe_w, nullptr, max, SPLICE_F_MOVE); });
    if (n < 0 && errno == EINVAL && !spliced_) {
      log::debug("page relay: no splice from kernel TLS here, copying");
      mode_ = Mode::Copy;
      return move_to_local(pipe_r, pipe_w, buf, max);
    }
    if (n < 0) throw_network_error(errno);
    if (n == 0) return 0;
    spliced_ = true;
    bytes_in_ += static_cast<uint64_t>(n);
    for (ssize_t left = n; left > 0;) {
      ssize_t m = retry_eintr([&] {
        return ::splice(pipe_r, nullptr, local_.get(), nullptr, static_cast<size_t>(left),
                        SPLICE_F_MOVE);
      });
      if (m <= 0) throw_errno("passing pages to criu page-server");
      left -= m;
    }
    return static_cast<size_t>(n);
  }
  ssize_t n = retry_eintr([&] { return ::read(tls_.get(), buf, max); });
  if (n < 0) throw_network_error(errno);
  if (n == 0) return 0;
  bytes_in_ += static_cast<uint64_t>(n);
  if (!send_all(local_.get(), buf, static_cast<size_t>(n)))
    throw_errno("passing pages to criu page-server");
  return static_cast<size_t>(n);
}

// One record or more from the kTLS socket to CRIU's end. Blocks until the
// kernel has opened a whole record (the point of the relay).
bool PageRelay::network_to_local(int pipe_r, int pipe_w, char* buf, size_t len) {
  if (framing_ == Framing::ZeroRuns) return frame_to_local(pipe_r, pipe_w, buf, len);
  return move_to_local(pipe_r, pipe_w, buf, std::min(len, kChunk)) > 0;
}

// A frame is sent whole before the sender waits for an answer, so once its
// header is here the rest follows without anything from this side: the
// relay blocks until it has passed the whole frame on.
bool PageRelay::frame_to_local(int pipe_r, int pipe_w, char* buf, size_t len) {
  char h[zero_runs::kHeaderSize];
  if (const size_t got = read_network(h, sizeof h); got < sizeof h) {
    if (got == 0) return false;
    throw Error("the page channel ended inside a frame's header", Cause::IO);
  }
  const zero_runs::Header frame = zero_runs::parse_header(h);
  if (frame.kind == zero_runs::kZeros) {
    zeros_to_local(frame.length);
    return true;
  }
  if (frame.kind == zero_runs::kLz4) {
    lz4_in_.resize(frame.length);
    if (read_network(lz4_in_.data(), frame.length) < frame.length)
      throw Error("the page channel ended inside a frame", Cause::IO);
    zero_runs::inflate(lz4_in_.data(), lz4_in_.size(), lz4_out_);
    zero_runs::for_each_inner_frame(lz4_out_, [&](const zero_runs::Header& inner, const char* data) {
      if (!data) {
        zeros_to_local(inner.length);
      } else if (!send_all(local_.get(), data, inner.length)) {
        throw_errno("passing pages to criu page-server");
      }
    });
    return true;
  }
  for (size_t left = frame.length; left > 0;) {
    const size_t n = move_to_local(pipe_r, pipe_w, buf, std::min({left, len, kChunk}));
    if (n == 0) throw Error("the page channel ended inside a frame", Cause::IO);
    left -= n;
  }
  return true;
}

size_t PageRelay::read_network(char* to, size_t len) {
  size_t got = 0;
  while (got < len) {
    ssize_t n = retry_eintr([&] { return ::read(tls_.get(), to + got, len - got); });
    if (n < 0) throw_network_error(errno);
    if (n == 0) break;
    got += static_cast<size_t>(n);
    bytes_in_ += static_cast<uint64_t>(n);
  }
  return got;
}

void PageRelay::zeros_to_local(size_t len) {
  static const char zeros[kChunk] = {};
  for (size_t left = len; left > 0;) {
    const size_t n = std::min(left, sizeof zeros);
    if (!send_all(local_.get(), zeros, n)) throw_errno("passing pages to criu page-server");
    left -= n;
  }
  zero_bytes_ += len;
}

void PageRelay::run() {
  // A peer gone while splicing into its socket raises SIGPIPE in this
  // thread; blocked here it stays pending and dies with the thread.
  sigset_t pipe_sig;
  sigemptyset(&pipe_sig);
  sigaddset(&pipe_sig, SIGPIPE);
  pthread_sigmask(SIG_BLOCK, &pipe_sig, nullptr);
  std::vector<char> buf(kChunk);
  int pipe_fds[2] = {-1, -1};
  if (mode_ == Mode::Splice && ::pipe2(pipe_fds, O_CLOEXEC) != 0) mode_ = Mode::Copy;
  UniqueFd pipe_r(pipe_fds[0]), pipe_w(pipe_fds[1]);
  bool network_eof = false;
  bool failed = false;
  try {
    for (;;) {
      pollfd fds[2] = {{local_.get(), POLLIN, 0},
                       {network_eof ? -1 : tls_.get(), POLLIN, 0}};
      if (retry_eintr([&] { return ::poll(fds, 2, -1); }) < 0)
        throw_errno("poll on the page channel");
      if (stopping_) break;
      // CRIU's answers (a few bytes per flush) go back to the sender.
      if (fds[0].revents) {
        char reply[4096];
        ssize_t n = retry_eintr([&] { return ::read(local_.get(), reply, sizeof reply); });
        if (n < 0 && errno == EAGAIN) continue;
        if (n < 0) throw_errno("reading criu page-server's answer");
        if (n == 0) break;  // the page server is done
        if (!send_all(tls_.get(), reply, static_cast<size_t>(n)))
          throw_errno("sending criu page-server's answer");
      }
      if (!network_eof && fds[1].revents) {
        if (!network_to_local(pipe_r.get(), pipe_w.get(), buf.data(), buf.size())) {
          network_eof = true;
          network_ended_ = true;
          if (on_end_ == OnEnd::Close) ::shutdown(local_.get(), SHUT_WR);  // CRIU reads the end
        }
      }
    }
  } catch (const std::exception& e) {
    fail(e.what());
    failed = true;
  }
  // CRIU sees the end of its socket whatever ended the relay (unless told
  // to hold it after a failure: stop() shuts it down then), and the
  // sender sees the end of the page channel at once (unread bytes make
  // the close a reset): a sender whose pages are no longer read must not
  // wait for a full TCP window until its time-out.
  if (!failed || on_end_ == OnEnd::Close) ::shutdown(local_.get(), SHUT_RDWR);
  std::lock_guard<std::mutex> lock(mutex_);
  tls_.reset();
}

}  // namespace crx::migrate
