// TCP plumbing for migration: HOST:PORT parsing, connecting with a
// time-out, a listener whose accept can time out.
#pragma once
#include <chrono>
#include <string>

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

// The peer's address as text ("10.0.0.1:41234").
std::string peer_name(int fd);

}  // namespace crx::migrate
