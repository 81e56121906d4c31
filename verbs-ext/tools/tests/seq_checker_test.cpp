#include <gtest/gtest.h>

#include <vector>

#include "seq/checker.hpp"
#include "seq/message.hpp"

namespace crx::verbs_seq {
namespace {

SeqCounts feed(const std::vector<uint64_t>& seqs, uint64_t total) {
  SeqChecker c;
  for (auto s : seqs) c.on_message(s);
  c.finish(total);
  return c.counts();
}

TEST(SeqChecker, InOrderRunIsClean) {
  auto c = feed({0, 1, 2, 3, 4}, 5);
  EXPECT_TRUE(c.clean());
  EXPECT_EQ(c.in_order, 5u);
  EXPECT_EQ(c.received, 5u);
}

TEST(SeqChecker, EmptyRunWithZeroTotalIsClean) { EXPECT_TRUE(feed({}, 0).clean()); }

TEST(SeqChecker, DuplicateIsCounted) {
  auto c = feed({0, 1, 1, 2}, 3);
  EXPECT_EQ(c.duplicates, 1u);
  EXPECT_EQ(c.missing, 0u);
  EXPECT_EQ(c.out_of_order, 0u);
  EXPECT_FALSE(c.clean());
}

TEST(SeqChecker, SkippedNumberIsMissingAndOutOfOrder) {
  auto c = feed({0, 1, 3, 4}, 5);
  EXPECT_EQ(c.missing, 1u);
  EXPECT_EQ(c.out_of_order, 1u);
  EXPECT_EQ(c.duplicates, 0u);
}

TEST(SeqChecker, LateArrivalFillsItsGap) {
  auto c = feed({0, 2, 1, 3}, 4);
  EXPECT_EQ(c.missing, 0u);
  EXPECT_EQ(c.out_of_order, 2u);  // 2 came early, 1 came late
  EXPECT_EQ(c.duplicates, 0u);
}

TEST(SeqChecker, LateArrivalInsideALargeGapSplitsIt) {
  auto c = feed({0, 10, 5}, 11);
  EXPECT_EQ(c.missing, 8u);  // 1-4 and 6-9
  EXPECT_EQ(c.duplicates, 0u);
}

TEST(SeqChecker, RepeatOfALateArrivalIsADuplicate) {
  auto c = feed({0, 2, 1, 1}, 3);
  EXPECT_EQ(c.duplicates, 1u);
  EXPECT_EQ(c.missing, 0u);
}

TEST(SeqChecker, TailNeverArrivedIsMissing) {
  auto c = feed({0, 1, 2}, 10);
  EXPECT_EQ(c.missing, 7u);
  EXPECT_EQ(c.out_of_order, 0u);
}

TEST(SeqChecker, NumbersBeyondTheTotalAreUnexpected) {
  auto c = feed({0, 1, 2, 7}, 3);
  EXPECT_EQ(c.beyond_total, 1u);
  EXPECT_EQ(c.missing, 0u);  // holes above the total are not missing
}

TEST(SeqChecker, GapStraddlingTheTotalCountsOnlyTheLowerPart) {
  auto c = feed({0, 6}, 4);
  EXPECT_EQ(c.missing, 3u);  // 1,2,3
  EXPECT_EQ(c.beyond_total, 1u);
}

TEST(Message, RoundTripWithTrailerAndPayload) {
  std::vector<char> buf(256);
  fill_payload(buf.data(), buf.size(), 42);
  encode_message(buf.data(), buf.size(), 3, 42, 0, 0);
  MessageHeader h{};
  ASSERT_EQ(decode_message(buf.data(), buf.size(), h, true), Decode::Ok);
  EXPECT_EQ(h.seq, 42u);
  EXPECT_EQ(h.qp_index, 3u);
}

TEST(Message, TornTrailerAndCorruptPayloadAreSeen) {
  std::vector<char> buf(256);
  fill_payload(buf.data(), buf.size(), 7);
  encode_message(buf.data(), buf.size(), 0, 7, 0, 0);
  MessageHeader h{};
  buf[100] ^= 1;
  EXPECT_EQ(decode_message(buf.data(), buf.size(), h, true), Decode::BadPayload);
  EXPECT_EQ(decode_message(buf.data(), buf.size(), h, false), Decode::Ok);
  buf[250] ^= 1;
  EXPECT_EQ(decode_message(buf.data(), buf.size(), h, false), Decode::BadTrailer);
}

TEST(Message, ShortAndForeignBuffersAreRejected) {
  std::vector<char> buf(64, 0);
  MessageHeader h{};
  EXPECT_EQ(decode_message(buf.data(), 10, h, false), Decode::Short);
  EXPECT_EQ(decode_message(buf.data(), buf.size(), h, false), Decode::BadMagic);
}

TEST(Message, MinimumSizeMessageHasNoTrailer) {
  std::vector<char> buf(kMinMessageSize);
  encode_message(buf.data(), buf.size(), 0, 9, 0, 0);
  MessageHeader h{};
  ASSERT_EQ(decode_message(buf.data(), buf.size(), h, true), Decode::Ok);
  EXPECT_EQ(h.seq, 9u);
}

}  // namespace
}  // namespace crx::verbs_seq
