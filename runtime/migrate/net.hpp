// TCP plumbing for migration: HOST:PORT parsing, connecting with a
// time-out, a listener whose accept can time out.
#pragma once
#include <chrono>
#include <cstddef>
#include <string>
#include <string_view>

#include "common/unique_fd.hpp"

namespace crx::migrate {

struct HostPort {
  std::string host;
  int port = 0;
  std::string str() const;
};

// "10.0.0.2:7000", "[fe80::1]:7000", ":7000" (host empty = any). Throws
// Error naming the text for anything else (port 0..65535; 0 = any free port when listening).
HostPort parse_host_port(const std::string& text);

// Throws e.g. "connect to 10.0.0.2:7000: Connection refused (is `crx
// receive` listening there?)".
UniqueFd connect_tcp(const HostPort& to, std::chrono::milliseconds timeout);

class TcpListener {
 public:
  explicit TcpListener(const HostPort& at);
  // Zero timeout = wait forever. Throws Error on time-out.
  UniqueFd accept(std::chrono::milliseconds timeout, std::string* peer = nullptr);
  int port() const { return port_; }  // the bound port (useful with port 0)
  int fd() const { return fd_.get(); }

 private:
  UniqueFd fd_;
  int port_ = 0;
};

// A link that dies silently (cable pulled, NIC down: no RST, no FIN) must
// not leave a migration waiting for the longest of its time-outs: TCP
// keepalive probes an idle connection and TCP_USER_TIMEOUT bounds how long
// sent data may stay unacknowledged, so the socket fails with ETIMEDOUT
// about `within` after the link went away, whatever the caller waits for.
void detect_dead_peer(int fd, std::chrono::milliseconds within);

// Reads exactly `len` bytes of an answer from a blocking socket with
// SO_RCVTIMEO set. A peer answers only once it has read what was sent
// before the question, and over a slow link that may take longer than the
// time-out on a healthy link (a send buffer of a few MiB at 100 kbit/s:
// minutes). So a time-out fails the read only when the socket's send queue
// (SIOCOUTQ: sent and not yet acknowledged, or not yet sent) did not
// shrink during it: silence, not a slow drain. A link that died fails it
// by TCP_USER_TIMEOUT (detect_dead_peer) or by the queue standing still.
// Errors keep their errno: ETIMEDOUT after a silent time-out.
void read_answer(int fd, void* buf, size_t len, std::string_view what);

// The peer's address as text ("10.0.0.1:41234").
std::string peer_name(int fd);

}  // namespace crx::migrate
