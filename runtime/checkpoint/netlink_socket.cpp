#include "checkpoint/netlink_socket.hpp"

#include <cerrno>

#include "common/error.hpp"

namespace crx::checkpoint {

void throw_nl(const std::string& what, int nl_err) {
  throw Error(what + ": " + nl_geterror(nl_err), Cause::IO);
}

NlSock nl_connected(int protocol, const char* what) {
  NlSock s(nl_socket_alloc());
  if (!s) throw Error(std::string(what) + ": no memory for a netlink socket", Cause::Other, ENOMEM);
  if (int rc = nl_connect(s.get(), protocol); rc < 0) throw_nl(what, rc);
  return s;
}

}  // namespace crx::checkpoint
