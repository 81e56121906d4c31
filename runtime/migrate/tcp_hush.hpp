// Silent closing of a migrated container's TCP connections on the source.
//
// With --tcp-established the connections live on in the destination's
// copy. When the source copy is destroyed, its kernel would close the same
// connections and send FIN or RST to the peer, which kills them there too.
// CRIU avoids this by closing sockets in TCP repair mode, which sends
// nothing; the source copy that `crx migrate` kept frozen for rollback is
// not CRIU's any more, so crx does the same before killing it: it takes a
// duplicate of every TCP socket of the container's tasks (pidfd_getfd) and
// switches it to repair mode.
#pragma once
#include <sys/types.h>

#include <vector>

#include "common/unique_fd.hpp"

namespace crx::migrate {

class SilencedTcpSockets {
 public:
  // The TCP sockets of `pids` (frozen: they cannot close or open sockets
  // meanwhile) are in repair mode when this returns. Never throws: a socket
  // that cannot be silenced is logged and left as it is.
  explicit SilencedTcpSockets(const std::vector<pid_t>& pids);
  size_t count() const { return sockets_.size(); }

 private:
  std::vector<UniqueFd> sockets_;  // duplicates; closing them sends nothing
};

}  // namespace crx::migrate
