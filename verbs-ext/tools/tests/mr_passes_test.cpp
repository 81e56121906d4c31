#include "seq/mr_passes.hpp"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstring>
#include <vector>

namespace crx::verbs_seq {
namespace {

constexpr unsigned char kFill = 0xa5;

std::vector<char> filled(size_t pages) { return std::vector<char>(pages * kStampPage, kFill); }

TEST(MrPasses, FreshMemoryIsPassZero) {
  auto mr = filled(4);
  EXPECT_EQ(page_pass(mr.data(), kFill), 0u);
  MrPassChecker c(mr.data(), mr.size(), kFill);
  EXPECT_EQ(c.check(), "");
}

TEST(MrPasses, StampedPagesHoldTheirPass) {
  auto mr = filled(4);
  stamp_pages(mr.data(), mr.size(), 7);
  for (size_t p = 0; p < 4; ++p) EXPECT_EQ(page_pass(mr.data() + p * kStampPage, kFill), 7u);
}

TEST(MrPasses, APageBehindTheAnnouncedPassIsNamed) {
  auto mr = filled(4);
  stamp_pages(mr.data(), mr.size(), 3);
  MrPassChecker c(mr.data(), mr.size(), kFill);
  c.announced(3);
  EXPECT_EQ(c.check(), "");
  stamp_pages(mr.data() + 2 * kStampPage, kStampPage, 2);  // page 2 went back a pass
  std::string bad = c.check();
  EXPECT_NE(bad.find("MR page 2 holds remote write pass 2"), std::string::npos) << bad;
}

TEST(MrPasses, ALaterPassIsFineAndAnnouncementsOnlyGoUp) {
  auto mr = filled(2);
  stamp_pages(mr.data(), mr.size(), 5);
  MrPassChecker c(mr.data(), mr.size(), kFill);
  c.announced(4);
  c.announced(2);
  EXPECT_EQ(c.announced(), 4u);
  EXPECT_EQ(c.check(), "");
}

TEST(MrPasses, ATornStampIsNotJudged) {
  auto mr = filled(2);
  stamp_pages(mr.data(), mr.size(), 9);
  uint64_t newer = 10;
  std::memcpy(mr.data(), &newer, sizeof newer);  // first word written, second not yet
  EXPECT_EQ(page_pass(mr.data(), kFill), std::nullopt);
  MrPassChecker c(mr.data(), mr.size(), kFill);
  c.announced(9);
  EXPECT_EQ(c.check(), "");
}

TEST(MrPasses, FreshMemoryAfterAnAnnouncementFails) {
  auto mr = filled(2);
  MrPassChecker c(mr.data(), mr.size(), kFill);
  c.announced(1);
  EXPECT_NE(c.check(), "");
}

}  // namespace
}  // namespace crx::verbs_seq
