#include <gtest/gtest.h>

#include "migrate/precopy.hpp"

namespace {

using crx::migrate::PreCopyPlanner;
using crx::migrate::PreCopyPolicy;

constexpr uint64_t MiB = 1024 * 1024;

TEST(MigratePreCopy, DisabledWhenMaxRoundsIsZero) {
  PreCopyPlanner p(PreCopyPolicy{0, 20});
  EXPECT_FALSE(p.want_another_round());
}

TEST(MigratePreCopy, StopsAtMaxRoundsWhileShrinking) {
  PreCopyPlanner p(PreCopyPolicy{3, 20});
  EXPECT_TRUE(p.want_another_round());
  p.record_round(100 * MiB);
  EXPECT_TRUE(p.want_another_round());
  p.record_round(50 * MiB);
  EXPECT_TRUE(p.want_another_round());
  p.record_round(10 * MiB);
  EXPECT_FALSE(p.want_another_round());
  EXPECT_EQ(p.stop_reason(), "max rounds (3) reached");
  EXPECT_EQ(p.rounds_done(), 3);
}

TEST(MigratePreCopy, StopsEarlyWhenTheDirtySetStopsShrinking) {
  PreCopyPlanner p(PreCopyPolicy{10, 20});
  p.record_round(64 * MiB);
  p.record_round(8 * MiB);
  EXPECT_TRUE(p.want_another_round());
  p.record_round(7 * MiB);  // 12.5% smaller: below 20%
  EXPECT_FALSE(p.want_another_round());
  EXPECT_EQ(p.stop_reason(), "dirty set stopped shrinking: 8.0 MiB -> 7.0 MiB (12% < 20%)");
}

TEST(MigratePreCopy, GrowingDirtySetStops) {
  PreCopyPlanner p(PreCopyPolicy{10, 0});
  p.record_round(8 * MiB);
  p.record_round(9 * MiB);
  EXPECT_FALSE(p.want_another_round());
}

TEST(MigratePreCopy, NothingDirtyStops) {
  PreCopyPlanner p(PreCopyPolicy{10, 20});
  p.record_round(8 * MiB);
  p.record_round(0);
  EXPECT_FALSE(p.want_another_round());
  EXPECT_EQ(p.stop_reason(), "nothing dirty");
}

TEST(MigratePreCopy, HumanBytes) {
  EXPECT_EQ(crx::migrate::human_bytes(812), "812 B");
  EXPECT_EQ(crx::migrate::human_bytes(3 * MiB / 2), "1.5 MiB");
}

}  // namespace
