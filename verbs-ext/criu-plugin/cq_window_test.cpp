// A CQ's ring as its live window (as the kernel dumps it with
// IBV_MIGR_DUMP_CQ_WINDOWS) and made whole again: what survives (the
// window, every other record byte for byte), what goes (the slots outside
// it), and what check_cq_windows() and whole_cq_rings() refuse.
#include "cq_window.hpp"

#include <gtest/gtest.h>

#include <cstring>

#include "ibv_migr.h"
#include "test_dumps.hpp"

namespace crx::verbs_plugin {
namespace {

using test::DumpBuilder;

constexpr size_t kHead = sizeof(rxe_migr_rec_hdr) + sizeof(rxe_migr_cq);

std::vector<const rxe_migr_rec_hdr*> records(const std::vector<uint8_t>& dump) {
  std::vector<const rxe_migr_rec_hdr*> out;
  const rxe_migr_rec_hdr* r = nullptr;
  int err = 0;
  while ((r = ibv_migr_next_record(dump.data(), dump.size(), r, &err))) out.push_back(r);
  EXPECT_EQ(err, 0);
  return out;
}

rxe_migr_queue queue_of(const rxe_migr_rec_hdr* r) {
  rxe_migr_cq c;
  std::memcpy(&c, r + 1, sizeof(c));
  return c.queue;
}

rxe_migr_cq* cq_body(std::vector<uint8_t>& dump) {
  auto* r = reinterpret_cast<rxe_migr_rec_hdr*>(dump.data() + sizeof(rxe_migr_dump_hdr));
  return reinterpret_cast<rxe_migr_cq*>(r + 1);
}

const uint8_t* slot(const rxe_migr_rec_hdr* r, uint32_t i, uint32_t elem) {
  return reinterpret_cast<const uint8_t*>(r) + kHead + size_t{i} * elem;
}

TEST(CqWindow, KeepsTheWindowAndZeroesTheRest) {
  // 8 slots; the window wraps: consumer 6, producer 1 -> slots 6, 7, 0.
  const std::vector<uint8_t> full = DumpBuilder().pd(1).cq(2, 8, 32, 1, 6).mr(3).qp(4).dump();
  const std::vector<uint8_t> cut =
      DumpBuilder().pd(1).cq_window(2, 8, 32, 1, 6).mr(3).qp(4).dump();
  EXPECT_EQ(full.size() - cut.size(), 5u * 32) << "five dead slots left out";
  std::string why;
  EXPECT_TRUE(check_cq_windows(cut, &why)) << why;
  EXPECT_EQ(ibv_migr_check_dump(cut.data(), cut.size()), 0);
  EXPECT_EQ(queue_of(records(cut)[1]).data_len, 3u * 32);

  auto whole = whole_cq_rings(cut, &why);
  ASSERT_TRUE(whole) << why;
  ASSERT_EQ(whole->size(), full.size());
  auto in = records(full), out = records(*whole);
  ASSERT_EQ(out.size(), 4u);
  for (size_t k : {0u, 2u, 3u})  // PD, MR, QP (its send ring whole)
    EXPECT_EQ(std::memcmp(in[k], out[k], in[k]->len), 0) << "record " << k;
  EXPECT_EQ(std::memcmp(in[1], out[1], kHead), 0) << "CQ header and body";
  const std::vector<uint8_t> zero(32, 0);
  for (uint32_t i = 0; i < 8; i++) {
    const bool live = i == 6 || i == 7 || i == 0;
    EXPECT_EQ(std::memcmp(slot(out[1], i, 32), live ? slot(in[1], i, 32) : zero.data(), 32), 0)
        << "slot " << i;
  }
}

TEST(CqWindow, AnEmptyCqCarriesNoRing) {
  const std::vector<uint8_t> cut = DumpBuilder().cq_window(1, 4096, 128, 17, 17).dump();
  EXPECT_EQ(cut.size(), sizeof(rxe_migr_dump_hdr) + kHead);
  std::string why;
  auto whole = whole_cq_rings(cut, &why);
  ASSERT_TRUE(whole) << why;
  EXPECT_EQ(whole->size(), DumpBuilder().cq(1, 4096, 128, 17, 17).dump().size());
  EXPECT_EQ(queue_of(records(*whole)[0]).data_len, 4096u * 128);
}

TEST(CqWindow, AFullCqKeepsAllButOneSlot) {
  // rxe's ring is full with num_elem - 1 entries: producer just behind
  // the consumer.
  const std::vector<uint8_t> full = DumpBuilder().cq(1, 16, 64, 4, 5).dump();
  const std::vector<uint8_t> cut = DumpBuilder().cq_window(1, 16, 64, 4, 5).dump();
  EXPECT_EQ(queue_of(records(cut)[0]).data_len, 15u * 64);
  std::string why;
  auto whole = whole_cq_rings(cut, &why);
  ASSERT_TRUE(whole) << why;
  auto in = records(full)[0], out = records(*whole)[0];
  for (uint32_t i = 0; i < 16; i++)
    if (i != 4) {
      EXPECT_EQ(std::memcmp(slot(out, i, 64), slot(in, i, 64), 64), 0) << i;
    }
}

TEST(CqWindow, RefusesWhatTheKernelDoesNotDump) {
  std::string why;
  auto outside = DumpBuilder().cq_window(1, 8, 32, 0, 0).dump();
  cq_body(outside)->queue.producer = 8;
  EXPECT_FALSE(check_cq_windows(outside, &why));
  EXPECT_EQ(why, "CQ indices 8/0 outside its 8 slots");
  EXPECT_FALSE(check_cq_windows(DumpBuilder().cq_window(1, 6, 32, 0, 0).dump(), &why));
  EXPECT_EQ(why, "CQ ring of 6 x 32 bytes is not a ring rxe makes");

  auto truncated = DumpBuilder().pd(1).dump();
  truncated.push_back(0);
  EXPECT_FALSE(check_cq_windows(truncated, &why));
  EXPECT_NE(why.find("its header says"), std::string::npos) << why;

  auto bad_record = DumpBuilder().pd(1).dump();
  bad_record[sizeof(rxe_migr_dump_hdr)] = 99;  // no such object type
  EXPECT_FALSE(check_cq_windows(bad_record, &why));
  EXPECT_EQ(why, "malformed dump");
}

TEST(CqWindow, RefusesAWindowItsIndicesDoNotDescribe) {
  std::string why;
  // a whole ring where a window belongs (a kernel that ignored the flag)
  const std::vector<uint8_t> whole = DumpBuilder().cq(7, 8, 32, 3, 1).dump();
  EXPECT_FALSE(check_cq_windows(whole, &why));
  EXPECT_EQ(why, "CQ 7 carries 256 ring bytes, its indices say 64");
  EXPECT_FALSE(whole_cq_rings(whole, &why));
  EXPECT_EQ(why, "CQ 7 carries 256 ring bytes, its indices say 64");

  // a window whose indices were changed after the dump
  auto cut = DumpBuilder().cq_window(7, 8, 32, 3, 1).dump();
  cq_body(cut)->queue.producer = 4;
  EXPECT_FALSE(whole_cq_rings(cut, &why));
  EXPECT_EQ(why, "CQ 7 carries 64 ring bytes, its indices say 96");
}

TEST(CqWindow, WholeRefusesRingsLargerThanRxeMakes) {
  std::string why;
  // 2^20 slots of 64 bytes: 64 MiB from a record of a few bytes
  std::vector<uint8_t> cut = DumpBuilder().cq_window(1, 8, 64, 0, 0).dump();
  cq_body(cut)->queue.num_elem = 1u << 20;
  EXPECT_FALSE(whole_cq_rings(cut, &why));
  EXPECT_EQ(why, "CQ ring of 1048576 x 64 bytes is not a ring rxe makes");
}

TEST(CqWindow, WholeRefusesADumpOfMoreThan64MiB) {
  // sixteen CQs of 32768 x 128 bytes (4 MiB each) are over 64 MiB whole
  DumpBuilder b;
  for (uint32_t h = 1; h <= 16; h++) b.cq_window(h, 32768, 128, 0, 0);
  std::string why;
  EXPECT_FALSE(whole_cq_rings(b.dump(), &why));
  EXPECT_EQ(why, "CQ rings of more than 67108864 bytes");
}

}  // namespace
}  // namespace crx::verbs_plugin
