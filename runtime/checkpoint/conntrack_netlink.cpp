#include "checkpoint/conntrack_netlink.hpp"

#include <linux/netfilter/nfnetlink.h>
#include <linux/netfilter/nfnetlink_conntrack.h>
#include <netlink/netlink.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <memory>
#include <string>

#include "common/error.hpp"

namespace crx::checkpoint {
namespace {

struct SockFree {
  void operator()(nl_sock* s) const { nl_socket_free(s); }
};

[[noreturn]] void throw_nl(const char* what, int nl_err) {
  throw Error(std::string("nf_conntrack_netlink: ") + what + ": " + nl_geterror(nl_err), Cause::IO);
}

}  // namespace

void load_conntrack_netlink() {
  if (::access("/sys/module/nf_conntrack_netlink", F_OK) == 0) return;
  std::unique_ptr<nl_sock, SockFree> s(nl_socket_alloc());
  if (!s) throw Error("nf_conntrack_netlink: no memory for a netlink socket", Cause::Other, ENOMEM);
  if (int rc = nl_connect(s.get(), NETLINK_NETFILTER); rc < 0) throw_nl("connecting to nfnetlink", rc);
  // The table's counters: one small answer, where CRIU's request is a dump
  // of every connection. The kernel loads the subsystem for either.
  nfgenmsg g{};
  g.nfgen_family = AF_UNSPEC;
  g.version = NFNETLINK_V0;
  int rc = nl_send_simple(s.get(), (NFNL_SUBSYS_CTNETLINK << 8) | IPCTNL_MSG_CT_GET_STATS, 0, &g,
                          sizeof g);
  if (rc < 0) throw_nl("asking for conntrack's counters", rc);
  if (rc = nl_wait_for_ack(s.get()); rc < 0) throw_nl("conntrack's counters", rc);
}

}  // namespace crx::checkpoint
