// The host's cgroup2 options, kept across CRIU's runs (cgroup/root_options.hpp).
// put_back() itself reconfigures the host's hierarchy: it runs in the
// guests, where tests/vm/migrate's counter move checks both guests'
// options after the move.
#include <gtest/gtest.h>

#include "cgroup/root_options.hpp"

namespace cg = crx::cgroup;

namespace {

const char* kV2 =
    "22 29 0:20 / /proc rw,relatime - proc proc rw\n"
    "34 23 0:31 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:9 - cgroup2 cgroup2 "
    "rw,nsdelegate,favordynmods,memory_recursiveprot\n";

TEST(CgroupRootOptions, TheSuperblockOptionsOfTheV2Mount) {
  auto r = cg::RootOptions::parse(kV2);
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->mountpoint(), "/sys/fs/cgroup");
  EXPECT_EQ(r->options(),
            (std::vector<std::string>{"nsdelegate", "favordynmods", "memory_recursiveprot"}));
}

TEST(CgroupRootOptions, WhatCriusMountLeavesDiffers) {
  auto before = cg::RootOptions::parse(kV2);
  auto after = cg::RootOptions::parse(
      "34 23 0:31 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime - cgroup2 cgroup2 rw\n");
  ASSERT_TRUE(before && after);
  EXPECT_TRUE(after->options().empty());
  EXPECT_FALSE(*before == *after);
  // the mount's own flags are no superblock options
  auto ro = cg::RootOptions::parse(
      "34 23 0:31 / /sys/fs/cgroup ro,nosuid - cgroup2 cgroup2 ro,nsdelegate\n");
  ASSERT_TRUE(ro);
  EXPECT_EQ(ro->options(), std::vector<std::string>{"nsdelegate"});
}

TEST(CgroupRootOptions, HybridUnifiedOnlyAndNoneWithoutV2) {
  auto h = cg::RootOptions::parse(
      "26 25 0:24 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu\n"
      "30 25 0:28 / /sys/fs/cgroup/unified rw - cgroup2 cgroup2 rw,nsdelegate\n");
  ASSERT_TRUE(h);
  EXPECT_EQ(h->mountpoint(), "/sys/fs/cgroup/unified");
  EXPECT_EQ(h->options(), std::vector<std::string>{"nsdelegate"});
  EXPECT_FALSE(cg::RootOptions::parse("26 25 0:24 / /sys/fs/cgroup/cpu rw - cgroup cgroup rw,cpu\n"));
  // a container's cgroup2 somewhere else is not the host's
  EXPECT_FALSE(cg::RootOptions::parse(
      "40 25 0:31 / /run/x/rootfs/sys/fs/cgroup rw - cgroup2 cgroup2 rw\n"));
  EXPECT_FALSE(cg::RootOptions::parse(""));
}

}  // namespace
