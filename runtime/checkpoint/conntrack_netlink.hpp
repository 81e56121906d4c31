// nf_conntrack_netlink loaded while the container still runs.
//
// CRIU's dump of a network namespace asks ctnetlink for the namespace's
// tracked connections and expectations (criu/net.c, dump_nf_ct), whether
// or not anything in it uses conntrack. The first such request after boot
// makes the kernel load nf_conntrack_netlink and nf_conntrack (its
// autoload of "nfnetlink-subsys-1", a modprobe): 0.3-0.8 s in a TCG guest.
// Pre-dumps walk no namespace, so a migration's final dump is the first to
// ask, in the frozen window. The source asks once before the freeze
// instead: README.md, "Modules the dump would load".
#pragma once

namespace crx::checkpoint {

// Has the kernel load nf_conntrack_netlink, as CRIU's dump would, unless
// /sys/module says it is loaded. Throws Error (Cause::IO, libnl's reason)
// when the kernel could not: no ctnetlink, or no right to ask.
void load_conntrack_netlink();

}  // namespace crx::checkpoint
