// The MR write logs' arithmetic (rdma/mr_writes.hpp): which pages they
// name, and when they cannot tell.
#include "rdma/mr_writes.hpp"

#include <gtest/gtest.h>

namespace {

using crx::rdma::ContextWrites;
using crx::rdma::MrWrites;
using crx::rdma::PageRanges;
using crx::rdma::WriteBaseline;

constexpr uint64_t kPage = 4096;
constexpr uint64_t kA = 0x10000000;

MrWrites mr(uint64_t addr, uint64_t pages, std::initializer_list<uint64_t> written) {
  MrWrites m{addr, pages, std::vector<uint64_t>((pages + 63) / 64)};
  for (uint64_t p : written) m.bits[p / 64] |= 1ull << (p % 64);
  return m;
}

ContextWrites ctx(pid_t pid, uint64_t serial, uint64_t lost, std::vector<MrWrites> mrs = {},
                  const char* device = "rxe0") {
  return ContextWrites{pid, device, serial, lost, lost, std::move(mrs)};
}

TEST(MrWrites, BitsBecomeRangesOfPages) {
  EXPECT_EQ(crx::rdma::ranges_of(mr(kA, 130, {0, 1, 2, 63, 64, 129})),
            (PageRanges{{kA, kA + 3 * kPage}, {kA + 63 * kPage, kA + 65 * kPage},
                        {kA + 129 * kPage, kA + 130 * kPage}}));
  EXPECT_TRUE(crx::rdma::ranges_of(mr(kA, 10, {})).empty());
}

TEST(MrWrites, MergedRangesJoinWhereTheyTouch) {
  PageRanges a{{0, 2 * kPage}, {5 * kPage, 6 * kPage}};
  PageRanges b{{2 * kPage, 3 * kPage}, {4 * kPage, 5 * kPage}, {9 * kPage, 10 * kPage}};
  EXPECT_EQ(crx::rdma::merge(a, b),
            (PageRanges{{0, 3 * kPage}, {4 * kPage, 6 * kPage}, {9 * kPage, 10 * kPage}}));
}

TEST(MrWrites, Covers) {
  PageRanges r{{kA, kA + 2 * kPage}, {kA + 4 * kPage, kA + 5 * kPage}};
  EXPECT_TRUE(crx::rdma::covers(r, kA, 2 * kPage));
  EXPECT_FALSE(crx::rdma::covers(r, kA, 3 * kPage));
  EXPECT_FALSE(crx::rdma::covers(r, kA + 2 * kPage, kPage));
  EXPECT_TRUE(crx::rdma::covers(r, kA + 4 * kPage, kPage));
  EXPECT_FALSE(crx::rdma::covers({}, kA, kPage));
}

TEST(MrWrites, PagesWrittenSinceTheStartPerProcess) {
  WriteBaseline start({ctx(10, 1, 3, {mr(kA, 4, {})}), ctx(11, 2, 3, {mr(kA, 4, {})})});
  auto got = start.written_since({ctx(10, 1, 3, {mr(kA, 4, {1}), mr(kA + 8 * kPage, 2, {0})}),
                                  ctx(11, 2, 3, {mr(kA, 4, {})})});
  ASSERT_TRUE(got);
  EXPECT_EQ((*got)[10], (PageRanges{{kA + kPage, kA + 2 * kPage}, {kA + 8 * kPage, kA + 9 * kPage}}));
  EXPECT_TRUE((*got)[11].empty());
}

// An MR registered after the start logs from its registration: a context
// opened since counts as well.
TEST(MrWrites, AContextOpenedSinceCounts) {
  WriteBaseline start({ctx(10, 1, 0, {mr(kA, 4, {})})});
  auto got = start.written_since({ctx(10, 1, 0, {mr(kA, 4, {})}), ctx(10, 5, 0, {mr(kA, 4, {2})})});
  ASSERT_TRUE(got);
  EXPECT_EQ((*got)[10], (PageRanges{{kA + 2 * kPage, kA + 3 * kPage}}));
}

// An MR deregistered with pages logged took them along.
TEST(MrWrites, AnMrLostSinceTheStartMakesItUnknown) {
  WriteBaseline start({ctx(10, 1, 3, {mr(kA, 4, {})})});
  EXPECT_FALSE(start.written_since({ctx(10, 1, 4, {mr(kA, 4, {})})}));
}

// The device's count is only seen through an MR: a device the container
// has no MR on, at the start or at the end, cannot be vouched for.
TEST(MrWrites, ADeviceNoMrCanVouchForMakesItUnknown) {
  WriteBaseline start({ctx(10, 1, 0, {mr(kA, 4, {})})});
  EXPECT_FALSE(start.written_since({ctx(10, 0, 0)}));  // its MRs are gone
  WriteBaseline without_mr({ctx(10, 0, 0)});
  EXPECT_FALSE(without_mr.written_since({ctx(10, 1, 0, {mr(kA, 4, {})})}));
  EXPECT_FALSE(start.written_since({ctx(10, 1, 0, {mr(kA, 4, {})}), ctx(10, 0, 0, {}, "rxe1")}));
}

// At the start, the smallest count: an MR deregistered between two
// contexts' answers may have had bits set after the first one's clear.
TEST(MrWrites, TheBaselineIsTheSmallestCountSeen) {
  WriteBaseline start({ctx(10, 1, 3, {mr(kA, 4, {})}), ctx(11, 2, 4, {mr(kA, 4, {})})});
  EXPECT_FALSE(start.written_since({ctx(10, 1, 4, {mr(kA, 4, {})}), ctx(11, 2, 4, {mr(kA, 4, {})})}));
}

// A count that grew between one context's first and last MR.
TEST(MrWrites, ACountThatGrewWhileAContextAnsweredMakesItUnknown) {
  ContextWrites grew = ctx(10, 1, 3, {mr(kA, 4, {})});
  grew.lost_max = 4;
  WriteBaseline start({ctx(10, 1, 3, {mr(kA, 4, {})})});
  EXPECT_FALSE(start.written_since({grew}));
  // at the start the smaller one counts
  WriteBaseline from_grown({grew});
  EXPECT_TRUE(from_grown.written_since({ctx(10, 1, 3, {mr(kA, 4, {})})}));
}

// A context two processes hold: whose memory are its MRs in?
TEST(MrWrites, AContextTwoProcessesHoldMakesItUnknown) {
  WriteBaseline start({ctx(10, 1, 0, {mr(kA, 4, {})})});
  EXPECT_FALSE(start.written_since({ctx(10, 1, 0, {mr(kA, 4, {})}), ctx(12, 1, 0, {mr(kA, 4, {})})}));
  EXPECT_TRUE(start.written_since({ctx(10, 1, 0, {mr(kA, 4, {})}), ctx(10, 1, 0, {mr(kA, 4, {})})}));
}

}  // namespace
