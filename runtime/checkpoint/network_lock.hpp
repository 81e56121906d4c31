// Which network lock CRIU takes for a dump: nftables (in CRIU's own
// process, libnftables) or iptables (iptables-restore and ip6tables-restore
// helpers, to lock and again to unlock: seconds of the frozen window under
// TCG). README.md, "The network lock", has the measurements and the cases.
#pragma once

#include "spec/spec.hpp"

namespace crx::checkpoint {

// `crx checkpoint`: the dump ends the container and leaves CRIU's lock in
// place. nftables unless TCP connections are kept (the restore's
// per-connection unlock and the restored chain match iptables) or the
// namespace is joined by path (it outlives the dump, and the restore's
// nftables unlock deletes a table named after the new pid, not the one the
// dump left there).
bool nftables_lock_for_checkpoint(const spec::Spec& s, bool tcp_established);

// `crx migrate`: its dumps leave the container alive (frozen by its
// cgroup), so CRIU lifts the lock at the end of each dump by the name it
// made it with, and the destination's namespace is another one. nftables
// unless CRIU dumps the namespace with TCP connections in it: the restored
// iptables chain guards those sockets until they are back, where the
// nftables table cannot come back (nft_lock_tables.hpp).
bool nftables_lock_for_migration(const spec::Spec& s, bool tcp_established);

}  // namespace crx::checkpoint
