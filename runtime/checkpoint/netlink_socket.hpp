// A libnl socket with one owner, and libnl's failures as crx's errors: for
// the netlink conversations of checkpoint/ (fresh_netns.cpp,
// conntrack_netlink.cpp).
#pragma once

#include <netlink/netlink.h>

#include <memory>
#include <string>

namespace crx::checkpoint {

struct NlSockFree {
  void operator()(nl_sock* s) const { nl_socket_free(s); }
};
using NlSock = std::unique_ptr<nl_sock, NlSockFree>;

// libnl reports its own codes (NLE_*), not errno: the cause is the link to
// the kernel's netlink, an IO failure, and the text names libnl's reason.
[[noreturn]] void throw_nl(const std::string& what, int nl_err);

// A socket connected to the netlink family `protocol`; `what` names it in
// the error.
NlSock nl_connected(int protocol, const char* what);

}  // namespace crx::checkpoint
