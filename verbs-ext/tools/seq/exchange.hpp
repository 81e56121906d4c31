// The TCP side channel that swaps QP numbers, PSNs and GIDs before the RDMA
// traffic starts. It is closed once both sides are ready, so a process that
// is later checkpointed holds no TCP connection.
#pragma once
#include <cstdint>
#include <string>

#include "common/unique_fd.hpp"

namespace crx::verbs_seq {

// Listens on address:port and accepts one peer, or gives up after timeout_s.
UniqueFd accept_peer(const std::string& address, uint16_t port, double timeout_s);
// Connects to host:port, retrying until the peer listens or timeout_s passes.
UniqueFd connect_peer(const std::string& host, uint16_t port, double timeout_s);

// One newline-terminated line each way.
void send_line(int fd, const std::string& line);
std::string receive_line(int fd, double timeout_s);

}  // namespace crx::verbs_seq
