// Whether a container's network namespace is still as fresh as a new one.
//
// CRIU saves a network namespace it dumps with exec'd tools (`ip addr/route/
// rule save`, `iptables-save` and `ip6tables-save`, nft and legacy) and
// restores it with their `restore` twins: about 2.7 s of a frozen dump and
// 2.6 s of a restore in a TCG guest, for a namespace crx made with nothing
// in it (tests/bench/migrate/README.md, "Where a move without --empty-ns
// network goes"). A namespace nobody configured holds nothing those tools
// would carry, so it can move as CRIU's empty namespace (`--empty-ns
// network`: the restore makes a new one) and lose nothing. This tells the
// two apart by comparing what the tools would save with what a namespace
// made now has: README.md, "A network namespace nobody configured".
#pragma once

#include <sys/types.h>

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/unique_fd.hpp"

namespace crx::checkpoint {

// What CRIU's network dump would carry of the namespace netns_fd refers to,
// as text: its links, addresses, routes (every table) and rules (rtnetlink,
// libnl's one-line form), its nftables tables, its legacy iptables,
// ip6tables and arptables tables, and every sysctl under /proc/sys/net
// with its value. Read by a thread that joins the namespace (no exec, no
// fork). Throws Error with the errno of what failed.
std::string netns_fingerprint(int netns_fd);

// The same of a network namespace made for the purpose (and gone after).
std::string fresh_netns_fingerprint();

// Where two fingerprints first differ, as "it has ..." (a line only in
// now) or "it lacks ..." (only in fresh); nullopt when they are equal.
std::optional<std::string> fingerprint_difference(const std::string& now,
                                                  const std::string& fresh);

// Sysctls by their path under /proc/sys ("net/ipv4/ip_forward"), with
// their values as read (no trailing newline).
using NetSysctls = std::map<std::string, std::string>;

// How the network namespace of pid departs from a new one (fresh: a
// fresh_netns_fingerprint() of this host), in two parts. The network
// configuration (links, addresses, routes, rules, nftables and legacy
// tables): where it first differs, nullopt when it is as a new one's. And
// the sysctls whose value differs from a new namespace's, with the value
// pid's namespace has; only writable ones (the kernel's own read-only
// values are alike wherever they are the same kernel's), only readable
// ones (a value that cannot be read cannot be carried).
struct NetnsComparison {
  std::optional<std::string> config_difference;
  NetSysctls changed_sysctls;
  // The configuration was the one a NetnsWatch read before: no change to
  // it was announced since (else it was read again).
  bool config_read_ahead = false;
};
NetnsComparison compare_netns_with_fresh(pid_t pid, const std::string& fresh);

// compare_netns_with_fresh in two steps, so that what needs no frozen
// container is done before the freeze (README.md, "Compared at the freeze,
// read before it"). The constructor, while the container runs, subscribes
// to the namespace's rtnetlink and nftables change notifications, then
// reads its configuration and opens its sysctl files. compare(), at the
// freeze, reads the configuration again only if a notification came (or
// some were lost), the legacy tables anew, and every sysctl through the
// fd kept for it (one pread instead of a path lookup, an open and a
// close); a sysctl file that appeared since is opened then. Throws Error
// with the errno of what failed.
class NetnsWatch {
 public:
  explicit NetnsWatch(pid_t pid);
  ~NetnsWatch();
  NetnsWatch(NetnsWatch&&) noexcept;
  NetnsWatch& operator=(NetnsWatch&&) noexcept;

  // As compare_netns_with_fresh(pid, fresh), now. A pid that joined
  // another namespace since is compared from scratch. Without sysctls,
  // only the configuration: changed_sysctls() reads them later (a frozen
  // container's cannot change in between). Only a configuration read
  // again or the sysctls make a thread that joins the namespace; the legacy
  // tables are read through /proc/PID/net.
  enum class Sysctls { Now, Later };
  NetnsComparison compare(const std::string& fresh, Sysctls sysctls = Sysctls::Now) const;
  // The sysctls of compare(fresh) alone, now.
  NetSysctls changed_sysctls(const std::string& fresh) const;
  // The sysctl files kept open (at most half of RLIMIT_NOFILE's soft
  // limit: the rest of crx's work needs fds too).
  size_t sysctls_kept() const;

 private:
  void add_sysctls_here(std::vector<std::string>& lines) const;

  struct State;
  std::unique_ptr<State> s_;
};

// The sysctls CRIU 3.17 saves and restores with a network namespace it
// dumps (criu/net.c): every device's ipv4 and ipv6 `conf` entries and
// net.unix.max_dgram_qlen. A dump that keeps the namespace carries these;
// every other one is crx's to carry.
bool criu_carries_sysctl(const std::string& path);

// Writes each sysctl in the network namespace of pid, in the map's order
// ("conf/all" before "conf/default" before a device's). Throws Error
// naming the sysctl that could not be written, with its errno.
void apply_net_sysctls(pid_t pid, const NetSysctls& sysctls);

// Runs fn on a thread of its own in the network namespace netns_fd (-1: a
// new one); rethrows what fn throws.
void in_netns(int netns_fd, const std::function<void()>& fn);

// A new network namespace, held by the fd returned (nothing else holds
// it). Throws Error with the errno of what failed.
UniqueFd new_netns();

}  // namespace crx::checkpoint
