#include "checkpoint/network_lock.hpp"

namespace crx::checkpoint {
namespace {

enum class Netns { Host, Dumped, Joined };

Netns netns_of(const spec::Spec& s) {
  const spec::Namespace* ns = s.linux.find_namespace("network");
  if (!ns) return Netns::Host;
  return ns->path.empty() ? Netns::Dumped : Netns::Joined;
}

}  // namespace

bool nftables_lock_for_checkpoint(const spec::Spec& s, bool tcp_established) {
  return !tcp_established && netns_of(s) != Netns::Joined;
}

bool nftables_lock_for_migration(const spec::Spec& s, bool tcp_established) {
  return !(tcp_established && netns_of(s) == Netns::Dumped);
}

}  // namespace crx::checkpoint
