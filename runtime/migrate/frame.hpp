// Typed, length-prefixed frames over a stream socket: the control
// connection of a migration.
//
// Wire format (big-endian), 16-byte header then payload:
//   "CRXM" | version u8 | type u8 | reserved u16 (0) | length u32 | crc32 u32
// A frame longer than the connection's limit, a bad magic/version/type,
// non-zero reserved bits or a CRC mismatch is rejected with an Error that
// says which; nothing of such a frame's payload is handed to the caller.
#pragma once
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include "common/unique_fd.hpp"

namespace crx::migrate {

class TlsSession;

enum class FrameType : uint8_t {
  Hello = 1,          // client: {version, nonce, channel}
  Challenge = 2,      // server: {nonce, proof}
  Response = 3,       // client: {proof}
  AuthOk = 4,         // server: both proved the key
  StartTls = 5,       // server: same wire security; the TLS handshake follows
  Manifest = 10,      // sender: what is coming (JSON)
  Accept = 11,        // receiver: ready, with what it needs (JSON)
  RootfsData = 12,    // sender: a chunk of the rootfs tar stream
  RootfsEnd = 13,
  RoundStart = 20,    // sender: a pre-copy round / the final dump begins
  PageServerReady = 21,  // receiver: connect the page channel now
  RoundDone = 22,     // sender: CRIU finished this round (stats JSON)
  RoundAck = 23,      // receiver: page server finished cleanly
  Frozen = 24,        // sender: the source froze (final round opened ahead)
  ImageData = 30,     // sender: bytes of one image file at an offset
  ImageClose = 31,    // sender: file complete (name, size)
  ImageSymlink = 32,  // sender: a symlink in the images dir (parent link)
  DumpDone = 40,      // sender: all images sent, restore now
  RestoreOk = 41,     // receiver: container restored and running
  Commit = 42,        // sender: source destroyed, keep it
  CommitAck = 43,
  Abort = 44,         // either side: roll back (reason)
  LazyDone = 45,      // receiver (--lazy): every page arrived (stats JSON)
  LateState = 46,     // sender: what it read after the final images (JSON)
  Error = 50,         // either side: a clear one-line reason
  Progress = 51,
};

std::string_view frame_type_name(FrameType type);
bool is_known_frame_type(uint8_t type);

struct Frame {
  FrameType type{};
  std::string payload;
};

inline constexpr size_t kFrameHeaderSize = 16;
// A payload up to this size is sent with its header in one write (one TLS
// record: 16 KiB of plaintext at most); a larger one is not copied.
inline constexpr size_t kOneWriteFrame = 16384 - kFrameHeaderSize;
inline constexpr uint32_t kFrameMagic = 0x4352584d;  // "CRXM"
inline constexpr uint8_t kFrameVersion = 1;
inline constexpr size_t kDefaultMaxFrame = 4 * 1024 * 1024;
// Before authentication only handshake frames of this size are read.
inline constexpr size_t kHandshakeMaxFrame = 4096;

uint32_t crc32(std::string_view data);

// Encodes a frame (header + payload) into bytes; for tests and send().
std::string encode_frame(FrameType type, std::string_view payload);

class FrameConn {
 public:
  explicit FrameConn(UniqueFd fd, std::string peer = "peer");
  FrameConn(FrameConn&&) noexcept;
  FrameConn& operator=(FrameConn&&) noexcept;
  ~FrameConn();

  // Larger frames are refused before their payload is read.
  void set_max_frame(size_t bytes) { max_frame_ = bytes; }
  size_t max_frame() const { return max_frame_; }
  // Per-operation timeout; zero = wait forever.
  void set_timeout(std::chrono::milliseconds t) { timeout_ = t; }
  // Asked each time a wait times out: true when the peer is known to be
  // busy elsewhere (a migration's page channel still moving), so the wait
  // starts again; unset or false: the time-out error. May throw.
  void set_busy_check(std::function<bool()> check) { busy_ = std::move(check); }

  // Thread-safe with respect to other send() calls.
  void send(FrameType type, std::string_view payload = {});
  // Frames made by encode_frame(), concatenated: sent in one write, so
  // that under TLS they share records (up to 16 KiB each) instead of
  // taking one each. Thread-safe as send().
  void send_encoded(std::string_view frames);
  // Throws Error on time-out, EOF, oversized or corrupt frame.
  Frame receive();
  // receive(), and: an Error/Abort frame throws its text (Cause::Peer: the
  // peer said no); another type than `want` throws "unexpected <type>
  // frame, expected <want>".
  Frame expect(FrameType want);
  // Sends an Error frame, ignoring failures (the link may be gone).
  void send_error_quietly(std::string_view message) noexcept;

  // Runs the TLS handshake (auth.hpp starts it after the clear-text
  // hello); from then on every frame travels inside TLS. Throws Error.
  void start_tls(std::unique_ptr<TlsSession> tls);
  bool encrypted() const { return tls_ != nullptr; }
  const TlsSession* tls() const { return tls_.get(); }

  int fd() const { return fd_.get(); }
  const std::string& peer() const { return peer_; }
  uint64_t bytes_sent() const { return bytes_sent_; }
  uint64_t bytes_received() const { return bytes_received_; }
  void shutdown() noexcept;
  // Gives up the socket (e.g. to hand an authenticated channel to CRIU).
  // A TLS connection is switched to kernel TLS first (TlsSession::
  // hand_to_kernel), so whoever uses the fd reads and writes clear text
  // while the wire stays encrypted; throws Error when that cannot be done.
  UniqueFd release_fd();

 private:
  void write_all(const char* data, size_t len);
  void read_all(char* data, size_t len, bool at_frame_start);
  void wait_ready(short events, const char* what);

  UniqueFd fd_;
  std::unique_ptr<TlsSession> tls_;  // set once TLS runs on fd_
  bool tls_failed_ = false;
  std::string peer_;
  size_t max_frame_ = kDefaultMaxFrame;
  std::chrono::milliseconds timeout_{30000};
  std::function<bool()> busy_;
  std::unique_ptr<std::mutex> send_mutex_ = std::make_unique<std::mutex>();
  uint64_t bytes_sent_ = 0;
  uint64_t bytes_received_ = 0;
};

}  // namespace crx::migrate
