// Which network lock a dump takes (network_lock.hpp)
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "checkpoint/network_lock.hpp"
#include "spec/spec.hpp"
#include "spec_test_util.hpp"

using crx::checkpoint::nftables_lock_for_checkpoint;
using crx::checkpoint::nftables_lock_for_migration;

namespace {

// A config whose network namespace is "host" (none), "dumped" (its own)
// or "joined" (by path).
crx::spec::Spec with_network(const char* kind) {
  nlohmann::json doc = spec_test::minimal_config();
  auto& nss = doc["linux"]["namespaces"];
  if (std::string(kind) == "dumped") nss.push_back({{"type", "network"}});
  if (std::string(kind) == "joined") nss.push_back({{"type", "network"}, {"path", "/run/netns/n"}});
  return crx::spec::parse_spec(doc);
}

}  // namespace

TEST(NetworkLock, CheckpointTakesNftablesOnlyWithoutConnectionsInANamespaceItEnds) {
  EXPECT_TRUE(nftables_lock_for_checkpoint(with_network("host"), false));
  EXPECT_TRUE(nftables_lock_for_checkpoint(with_network("dumped"), false));
  EXPECT_FALSE(nftables_lock_for_checkpoint(with_network("joined"), false));
  EXPECT_FALSE(nftables_lock_for_checkpoint(with_network("host"), true));
  EXPECT_FALSE(nftables_lock_for_checkpoint(with_network("dumped"), true));
  EXPECT_FALSE(nftables_lock_for_checkpoint(with_network("joined"), true));
}

TEST(NetworkLock, MigrationTakesNftablesButForConnectionsInADumpedNamespace) {
  EXPECT_TRUE(nftables_lock_for_migration(with_network("host"), false));
  EXPECT_TRUE(nftables_lock_for_migration(with_network("dumped"), false));
  EXPECT_TRUE(nftables_lock_for_migration(with_network("joined"), false));
  EXPECT_TRUE(nftables_lock_for_migration(with_network("host"), true));
  EXPECT_FALSE(nftables_lock_for_migration(with_network("dumped"), true));
  EXPECT_TRUE(nftables_lock_for_migration(with_network("joined"), true));
}
