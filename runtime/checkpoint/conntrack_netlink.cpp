#include "checkpoint/conntrack_netlink.hpp"

#include <linux/netfilter/nfnetlink.h>
#include <linux/netfilter/nfnetlink_conntrack.h>
#include <sys/socket.h>
#include <unistd.h>

#include "checkpoint/netlink_socket.hpp"

namespace crx::checkpoint {

void load_conntrack_netlink() {
  if (::access("/sys/module/nf_conntrack_netlink", F_OK) == 0) return;
  NlSock s = nl_connected(NETLINK_NETFILTER, "nf_conntrack_netlink: nfnetlink");
  // The table's counters: one small answer, where CRIU's request is a dump
  // of every connection. The kernel loads the subsystem for either.
  nfgenmsg g{};
  g.nfgen_family = AF_UNSPEC;
  g.version = NFNETLINK_V0;
  int rc = nl_send_simple(s.get(), (NFNL_SUBSYS_CTNETLINK << 8) | IPCTNL_MSG_CT_GET_STATS, 0, &g,
                          sizeof g);
  if (rc < 0) throw_nl("nf_conntrack_netlink: asking for conntrack's counters", rc);
  if (rc = nl_wait_for_ack(s.get()); rc < 0) throw_nl("nf_conntrack_netlink: conntrack's counters", rc);
}

}  // namespace crx::checkpoint
