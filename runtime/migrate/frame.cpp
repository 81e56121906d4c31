#include "migrate/frame.hpp"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <cerrno>

#include "common/error.hpp"
#include "common/retry_eintr.hpp"
#include "migrate/tls_session.hpp"

namespace crx::migrate {
namespace {

void put32(char* p, uint32_t v) {
  p[0] = static_cast<char>(v >> 24);
  p[1] = static_cast<char>(v >> 16);
  p[2] = static_cast<char>(v >> 8);
  p[3] = static_cast<char>(v);
}

uint32_t get32(const char* p) {
  auto b = reinterpret_cast<const unsigned char*>(p);
  return (uint32_t{b[0]} << 24) | (uint32_t{b[1]} << 16) | (uint32_t{b[2]} << 8) | b[3];
}

std::array<uint32_t, 256> make_crc_table() {
  std::array<uint32_t, 256> t{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? 0xEDB88320u ^ (c >> 1) : c >> 1;
    t[i] = c;
  }
  return t;
}

}  // namespace

uint32_t crc32(std::string_view data) {
  static const auto table = make_crc_table();
  uint32_t c = 0xFFFFFFFFu;
  for (unsigned char ch : data) c = table[(c ^ ch) & 0xFF] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

std::string_view frame_type_name(FrameType type) {
  switch (type) {
    case FrameType::Hello: return "hello";
    case FrameType::Challenge: return "challenge";
    case FrameType::Response: return "response";
    case FrameType::AuthOk: return "auth-ok";
    case FrameType::StartTls: return "start-tls";
    case FrameType::Manifest: return "manifest";
    case FrameType::Accept: return "accept";
    case FrameType::RootfsData: return "rootfs-data";
    case FrameType::RootfsEnd: return "rootfs-end";
    case FrameType::RoundStart: return "round-start";
    case FrameType::PageServerReady: return "page-server-ready";
    case FrameType::RoundDone: return "round-done";
    case FrameType::RoundAck: return "round-ack";
    case FrameType::Frozen: return "frozen";
    case FrameType::ImageData: return "image-data";
    case FrameType::ImageClose: return "image-close";
    case FrameType::ImageSymlink: return "image-symlink";
    case FrameType::DumpDone: return "dump-done";
    case FrameType::RestoreOk: return "restore-ok";
    case FrameType::Commit: return "commit";
    case FrameType::CommitAck: return "commit-ack";
    case FrameType::Abort: return "abort";
    case FrameType::LazyDone: return "lazy-done";
    case FrameType::LateState: return "late-state";
    case FrameType::Error: return "error";
    case FrameType::Progress: return "progress";
  }
  return "unknown";
}

bool is_known_frame_type(uint8_t type) {
  return frame_type_name(static_cast<FrameType>(type)) != "unknown";
}

std::string encode_frame(FrameType type, std::string_view payload) {
  if (payload.size() > UINT32_MAX) throw Error("frame payload too large");
  std::string out(kFrameHeaderSize, '\0');
  put32(out.data(), kFrameMagic);
  out[4] = static_cast<char>(kFrameVersion);
  out[5] = static_cast<char>(type);
  put32(out.data() + 8, static_cast<uint32_t>(payload.size()));
  put32(out.data() + 12, crc32(payload));
  out.append(payload);
  return out;
}

FrameConn::FrameConn(UniqueFd fd, std::string peer) : fd_(std::move(fd)), peer_(std::move(peer)) {}
FrameConn::FrameConn(FrameConn&&) noexcept = default;
FrameConn& FrameConn::operator=(FrameConn&&) noexcept = default;
FrameConn::~FrameConn() = default;

void FrameConn::start_tls(std::unique_ptr<TlsSession> tls) {
  tls_ = std::move(tls);
  try {
    for (;;) {
      TlsIo r = tls_->handshake();
      if (r == TlsIo::Done) return;
      wait_ready(r == TlsIo::WantWrite ? POLLOUT : POLLIN, "in the TLS handshake with");
    }
  } catch (...) {
    tls_.reset();
    tls_failed_ = true;  // nothing more goes out in clear on this socket
    throw;
  }
}

UniqueFd FrameConn::release_fd() {
  if (tls_) {
    tls_->hand_to_kernel();
    tls_.reset();
  }
  return std::move(fd_);
}

void FrameConn::wait_ready(short events, const char* what) {
  // A TLS socket is non-blocking: without a time-out, wait here forever.
  if (timeout_.count() <= 0 && !tls_) return;
  struct pollfd p{fd_.get(), events, 0};
  int wait_ms = timeout_.count() > 0 ? static_cast<int>(timeout_.count()) : -1;
  for (;;) {
    int r = retry_eintr([&] { return ::poll(&p, 1, wait_ms); });
    if (r < 0) throw_errno(std::string("poll ") + peer_);
    if (r > 0) return;
    if (busy_ && busy_()) continue;
    throw Error(std::string("timed out after ") + std::to_string(timeout_.count() / 1000) +
                    " s " + what + " " + peer_,
                Cause::TimedOut);
  }
}

void FrameConn::write_all(const char* data, size_t len) {
  while (tls_ && len > 0) {
    size_t n = 0;
    TlsIo r = tls_->write(data, len, &n);
    if (r == TlsIo::Done) {
      data += n;
      len -= n;
      bytes_sent_ += n;
    } else {
      wait_ready(r == TlsIo::WantRead ? POLLIN : POLLOUT, "sending to");
    }
  }
  while (len > 0) {
    wait_ready(POLLOUT, "sending to");
    ssize_t n = retry_eintr([&] { return ::send(fd_.get(), data, len, MSG_NOSIGNAL); });
    if (n < 0) {
      if (errno == EAGAIN) continue;
      throw_errno("send to " + peer_);
    }
    data += n;
    len -= static_cast<size_t>(n);
    bytes_sent_ += static_cast<uint64_t>(n);
  }
}

void FrameConn::read_all(char* data, size_t len, bool at_frame_start) {
  size_t got = 0;
  while (tls_ && got < len) {
    size_t n = 0;
    TlsIo r = tls_->read(data + got, len - got, &n);
    if (r == TlsIo::Eof) {
      if (at_frame_start && got == 0) throw Error(peer_ + " closed the connection");
      throw Error(peer_ + " closed the connection in the middle of a frame");
    }
    if (r == TlsIo::Done) {
      got += n;
      bytes_received_ += n;
    } else {
      wait_ready(r == TlsIo::WantWrite ? POLLOUT : POLLIN, "waiting for");
    }
  }
  while (got < len) {
    wait_ready(POLLIN, "waiting for");
    ssize_t n = retry_eintr([&] { return ::recv(fd_.get(), data + got, len - got, 0); });
    if (n < 0) {
      if (errno == EAGAIN) continue;
      throw_errno("receive from " + peer_);
    }
    if (n == 0) {
      if (at_frame_start && got == 0) throw Error(peer_ + " closed the connection");
      throw Error(peer_ + " closed the connection in the middle of a frame");
    }
    got += static_cast<size_t>(n);
    bytes_received_ += static_cast<uint64_t>(n);
  }
}

void FrameConn::send(FrameType type, std::string_view payload) {
  // A small frame leaves in one write: under TLS every write is a record
  // of its own, each sealed and framed, so a header apart would double the
  // records (and the cost, under a guest's emulated CPU) of the images'
  // many small frames, most of them sent inside the frozen window.
  if (payload.size() <= kOneWriteFrame) {
    const std::string frame = encode_frame(type, payload);
    std::lock_guard lock(*send_mutex_);
    write_all(frame.data(), frame.size());
    return;
  }
  std::string header = encode_frame(type, {});
  put32(header.data() + 8, static_cast<uint32_t>(payload.size()));
  put32(header.data() + 12, crc32(payload));
  std::lock_guard lock(*send_mutex_);
  write_all(header.data(), header.size());
  write_all(payload.data(), payload.size());
}

void FrameConn::send_encoded(std::string_view frames) {
  std::lock_guard lock(*send_mutex_);
  write_all(frames.data(), frames.size());
}

Frame FrameConn::receive() {
  char h[kFrameHeaderSize];
  read_all(h, sizeof h, true);
  if (get32(h) != kFrameMagic) {
    throw Error("corrupt frame from " + peer_ + ": bad magic (not a crx migration peer?)");
  }
  if (static_cast<uint8_t>(h[4]) != kFrameVersion) {
    throw Error("frame from " + peer_ + " has protocol version " +
                std::to_string(static_cast<uint8_t>(h[4])) + ", this crx speaks " +
                std::to_string(kFrameVersion));
  }
  uint8_t type = static_cast<uint8_t>(h[5]);
  if (!is_known_frame_type(type)) {
    throw Error("corrupt frame from " + peer_ + ": unknown type " + std::to_string(type));
  }
  if (h[6] != 0 || h[7] != 0) throw Error("corrupt frame from " + peer_ + ": reserved bits set");
  uint32_t len = get32(h + 8);
  if (len > max_frame_) {
    throw Error("oversized frame from " + peer_ + ": " + std::to_string(len) +
                " bytes, limit " + std::to_string(max_frame_));
  }
  Frame f;
  f.type = static_cast<FrameType>(type);
  f.payload.resize(len);
  read_all(f.payload.data(), len, false);
  if (crc32(f.payload) != get32(h + 12)) {
    throw Error("corrupt frame from " + peer_ + ": checksum mismatch in " +
                std::string(frame_type_name(f.type)) + " frame");
  }
  return f;
}

Frame FrameConn::expect(FrameType want) {
  Frame f = receive();
  if (f.type == want) return f;
  if (f.type == FrameType::Error || f.type == FrameType::Abort) {
    throw Error(peer_ + ": " + (f.payload.empty() ? std::string("aborted") : f.payload), Cause::Peer);
  }
  throw Error("unexpected " + std::string(frame_type_name(f.type)) + " frame from " + peer_ +
              ", expected " + std::string(frame_type_name(want)));
}

void FrameConn::send_error_quietly(std::string_view message) noexcept {
  if (tls_failed_) return;
  try {
    auto saved = timeout_;
    timeout_ = std::chrono::milliseconds(2000);
    send(FrameType::Error, message);
    timeout_ = saved;
  } catch (...) {
  }
}

void FrameConn::shutdown() noexcept {
  if (fd_) ::shutdown(fd_.get(), SHUT_RDWR);
}

}  // namespace crx::migrate
