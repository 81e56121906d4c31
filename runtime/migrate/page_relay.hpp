// The receive side's page channel in kernel TLS, handed to `criu
// page-server` through one end of a socketpair, with a crx thread moving
// the bytes in between.
//
// Why: CRIU 3.17's page server polls its socket and then splice()s from it
// with SPLICE_F_NONBLOCK (criu/page-xfer.c, page_server_add). On a kTLS
// receiving socket poll() says "readable" as soon as TCP holds any byte,
// but the kernel (6.1's tls_sw_splice_read) returns EAGAIN until a whole
// record has arrived and been opened; CRIU takes that EAGAIN for a broken
// socket and every migration rolled back. A unix socket gives CRIU what it
// expects (readable means data to splice), and the relay reads the kTLS
// socket blocking, a record at a time.
//
// One owner, one thread: the relay ends when CRIU closes its end (the page
// server is done), on an error of either socket, or when the owner stops
// it; the destructor stops and joins it on every path. When it ends it
// closes the network socket, so the sender learns at once that its pages
// are no longer read.
#pragma once
#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>

#include "common/unique_fd.hpp"

namespace crx::migrate {

// Whether fd is a TCP socket in kernel TLS (its TCP_ULP is "tls").
bool is_kernel_tls_socket(int fd);

class PageRelay {
 public:
  // Splice: kTLS -> pipe -> unix socket with blocking splice(2); falls back
  // to Copy when the kernel refuses to splice from the kTLS socket.
  // Copy: read(2) into a buffer, write(2) out.
  enum class Mode { Splice, Copy };

  // What CRIU's end sees when the network side ends or fails.
  //   Close: its end is shut down at once (a page server: the round ends).
  //   Hold: its end stays open until stop() - for `criu lazy-pages`, whose
  //     end closing would make it exit and drop the restored tasks'
  //     userfaultfds, after which the pages they lack read as zeros. The
  //     owner kills the tasks first, then stops the relay. A network end
  //     of stream is not passed on either: the daemon closes its end itself
  //     once it has every page (network_ended() tells the owner).
  enum class OnEnd { Close, Hold };

  // What the network side carries: CRIU's stream as it is, or in the
  // frames of zero_runs.hpp (compressed ones too), which the relay writes
  // out as that stream.
  enum class Framing { None, ZeroRuns };

  // Takes the network socket (kTLS, or any stream socket with ZeroRuns;
  // made blocking); creates the socketpair. Throws Error.
  explicit PageRelay(UniqueFd tls_socket, Mode mode = Mode::Splice, OnEnd on_end = OnEnd::Close,
                     Framing framing = Framing::None);
  ~PageRelay();
  PageRelay(const PageRelay&) = delete;
  PageRelay& operator=(const PageRelay&) = delete;

  // The end for CRIU (once; the caller hands it on and closes its copy).
  UniqueFd take_peer_end();
  // Ends the relay (shuts both sockets down) and joins it; idempotent.
  void stop();
  // Joins the relay, which must be ending by itself (the peer end closed).
  void join();
  // What broke the relay before stop(), "" if nothing did.
  std::string error() const;
  uint64_t bytes_from_network() const { return bytes_in_.load(); }
  // Of what went to CRIU, the bytes written as zeros for ZeroRuns frames.
  uint64_t zero_bytes() const { return zero_bytes_.load(); }
  // The network side reached its end of stream (OnEnd::Hold keeps it from CRIU).
  bool network_ended() const { return network_ended_.load(); }
  // The mode in use (Copy after a fallback).
  Mode mode() const { return mode_.load(); }

 private:
  void run();
  bool network_to_local(int pipe_r, int pipe_w, char* buf, size_t len);  // false: EOF
  // Exactly len bytes from the network, fewer only at its end of stream.
  size_t read_network(char* to, size_t len);
  void zeros_to_local(size_t len);
  // Framing::ZeroRuns: one frame from the network to CRIU's end.
  bool frame_to_local(int pipe_r, int pipe_w, char* buf, size_t len);  // false: EOF
  // Up to max bytes from the network to CRIU's end (splice, else copy);
  // 0 at the end of the stream.
  size_t move_to_local(int pipe_r, int pipe_w, char* buf, size_t max);
  void fail(const std::string& what);

  UniqueFd tls_, local_, peer_;
  std::atomic<Mode> mode_;
  OnEnd on_end_;
  Framing framing_;
  bool spliced_ = false;  // a splice from the network worked: no fallback after
  std::atomic<bool> stopping_{false};
  std::atomic<bool> network_ended_{false};
  std::atomic<uint64_t> bytes_in_{0};
  std::atomic<uint64_t> zero_bytes_{0};
  std::string lz4_in_, lz4_out_;  // a kLz4 frame's payload and what it decoded to
  mutable std::mutex mutex_;  // error_, and tls_ being closed by the thread
  std::string error_;
  std::thread thread_;
};

}  // namespace crx::migrate
