// A CQ's ring as its live window (as the kernel dumps it with
// IBV_MIGR_DUMP_CQ_WINDOWS) and made whole again by libverbs-ext's
// ibv_migr_cq_window_bytes (what REFILL sends with
// IBV_MIGR_RESTORE_CQ_WINDOW): what survives (the window, every other
// record byte for byte), what goes (the slots outside it), and what
// check_cq_windows() and the library refuse.
#include "cq_window.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
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

// The whole ring a CQ record's window describes, asked of libverbs-ext
// (ibv_migr_cq_window_bytes, what REFILL sends) in chunks of chunk bytes;
// *with_entry counts the chunks it says hold an entry.  Asked without an
// output first (REFILL's question whether to send a chunk), it must give
// the same answer.
std::vector<uint8_t> whole_ring(const rxe_migr_rec_hdr* r, uint32_t chunk, int* with_entry) {
  rxe_migr_queue q = queue_of(r);
  const uint32_t len = q.num_elem * q.elem_size;
  std::vector<uint8_t> out(len, 0xee);
  *with_entry = 0;
  for (uint32_t off = 0; off < len; off += chunk) {
    uint32_t n = std::min(chunk, len - off);
    int asked = ibv_migr_cq_window_bytes(&q, slot(r, 0, 0), off, n, nullptr);
    int any = ibv_migr_cq_window_bytes(&q, slot(r, 0, 0), off, n, out.data() + off);
    EXPECT_GE(any, 0) << "chunk at " << off;
    EXPECT_EQ(asked, any) << "chunk at " << off << ", asked without an output";
    *with_entry += any > 0;
  }
  return out;
}

TEST(CqWindow, EntriesGoBackToTheirSlotsAndTheRestIsZero) {
  // 8 slots; the window wraps: consumer 6, producer 1 -> slots 6, 7, 0.
  const std::vector<uint8_t> full = DumpBuilder().pd(1).cq(2, 8, 32, 1, 6).mr(3).qp(4).dump();
  const std::vector<uint8_t> cut =
      DumpBuilder().pd(1).cq_window(2, 8, 32, 1, 6).mr(3).qp(4).dump();
  EXPECT_EQ(full.size() - cut.size(), 5u * 32) << "five dead slots left out";
  std::string why;
  EXPECT_TRUE(check_cq_windows(cut, &why)) << why;
  EXPECT_EQ(ibv_migr_check_dump(cut.data(), cut.size()), 0);
  auto in = records(full), out = records(cut);
  ASSERT_EQ(out.size(), 4u);
  for (size_t k : {0u, 2u, 3u})  // PD, MR, QP (its send ring whole)
    EXPECT_EQ(std::memcmp(in[k], out[k], in[k]->len), 0) << "record " << k;
  EXPECT_EQ(queue_of(out[1]).data_len, 3u * 32);

  // whole, and in chunks that split entries (48 bytes over 32-byte slots)
  const std::vector<uint8_t> zero(32, 0);
  for (uint32_t chunk : {256u, 48u}) {
    int with_entry = 0;
    std::vector<uint8_t> ring = whole_ring(out[1], chunk, &with_entry);
    for (uint32_t i = 0; i < 8; i++) {
      const bool live = i == 6 || i == 7 || i == 0;
      EXPECT_EQ(std::memcmp(ring.data() + i * 32, live ? slot(in[1], i, 32) : zero.data(), 32), 0)
          << "slot " << i << ", chunks of " << chunk;
    }
    // 48-byte chunks: [0,48) [48,96) ... [192,240) [240,256); slot 0
    // ([0,32)) is in the first, slots 6 and 7 ([192,256)) in the last two
    EXPECT_EQ(with_entry, chunk == 256 ? 1 : 3) << "chunks of " << chunk;
  }
}

TEST(CqWindow, AnEmptyCqCarriesNoRing) {
  const std::vector<uint8_t> cut = DumpBuilder().cq_window(1, 4096, 128, 17, 17).dump();
  EXPECT_EQ(cut.size(), sizeof(rxe_migr_dump_hdr) + kHead);
  std::string why;
  EXPECT_TRUE(check_cq_windows(cut, &why)) << why;
  int with_entry = -1;
  std::vector<uint8_t> ring = whole_ring(records(cut)[0], 0xf000, &with_entry);
  EXPECT_EQ(with_entry, 0) << "nothing to send but the last chunk";
  EXPECT_EQ(ring, std::vector<uint8_t>(4096u * 128, 0));
}

TEST(CqWindow, AFullCqKeepsAllButOneSlot) {
  // rxe's ring is full with num_elem - 1 entries: producer just behind
  // the consumer.
  const std::vector<uint8_t> full = DumpBuilder().cq(1, 16, 64, 4, 5).dump();
  const std::vector<uint8_t> cut = DumpBuilder().cq_window(1, 16, 64, 4, 5).dump();
  EXPECT_EQ(queue_of(records(cut)[0]).data_len, 15u * 64);
  int with_entry = 0;
  std::vector<uint8_t> ring = whole_ring(records(cut)[0], 100, &with_entry);
  auto in = records(full)[0];
  for (uint32_t i = 0; i < 16; i++)
    EXPECT_EQ(std::memcmp(ring.data() + i * 64,
                          i == 4 ? std::vector<uint8_t>(64, 0).data() : slot(in, i, 64), 64),
              0)
        << i;
}

TEST(CqWindow, TheLibraryRefusesWhatIsNoWindowOfARing) {
  rxe_migr_queue q = queue_of(records(DumpBuilder().cq_window(1, 8, 32, 3, 1).dump())[0]);
  std::vector<uint8_t> win(q.data_len, 1), out(256);
  EXPECT_EQ(ibv_migr_cq_window_bytes(&q, win.data(), 0, 256, out.data()), 1);
  EXPECT_EQ(ibv_migr_cq_window_bytes(&q, win.data(), 224, 33, out.data()), -EINVAL)
      << "past the ring's end";
  EXPECT_EQ(ibv_migr_cq_window_bytes(&q, win.data(), 224, 33, nullptr), -EINVAL)
      << "past the ring's end, asked without an output";
  auto bad = [&](auto change) {
    rxe_migr_queue b = q;
    change(b);
    return ibv_migr_cq_window_bytes(&b, win.data(), 0, 32, out.data());
  };
  EXPECT_EQ(bad([](rxe_migr_queue& b) { b.num_elem = 6; }), -EINVAL) << "not a power of two";
  EXPECT_EQ(bad([](rxe_migr_queue& b) { b.elem_size = 0; }), -EINVAL);
  EXPECT_EQ(bad([](rxe_migr_queue& b) { b.producer = 8; }), -EINVAL) << "index outside";
  EXPECT_EQ(bad([](rxe_migr_queue& b) { b.data_len = 96; }), -EINVAL) << "not its indices' window";
  EXPECT_EQ(bad([](rxe_migr_queue& b) { b.num_elem = 1u << 31, b.elem_size = 4; }), -EINVAL)
      << "a ring larger than a queue's data_len can say";
}

TEST(CqWindow, RefusesWhatTheKernelDoesNotDump) {
  std::string why;
  auto outside = DumpBuilder().cq_window(1, 8, 32, 0, 0).dump();
  cq_body(outside)->queue.producer = 8;
  EXPECT_FALSE(check_cq_windows(outside, &why));
  EXPECT_EQ(why, "CQ indices 8/0 outside its 8 slots");
  EXPECT_FALSE(check_cq_windows(DumpBuilder().cq_window(1, 6, 32, 0, 0).dump(), &why));
  EXPECT_EQ(why, "CQ ring of 6 x 32 bytes is not a ring rxe makes");
  // 2^20 slots of 64 bytes: 64 MiB from a record of a few bytes
  std::vector<uint8_t> huge = DumpBuilder().cq_window(1, 8, 64, 0, 0).dump();
  cq_body(huge)->queue.num_elem = 1u << 20;
  EXPECT_FALSE(check_cq_windows(huge, &why));
  EXPECT_EQ(why, "CQ ring of 1048576 x 64 bytes is not a ring rxe makes");

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

  // a window whose indices were changed after the dump
  auto cut = DumpBuilder().cq_window(7, 8, 32, 3, 1).dump();
  cq_body(cut)->queue.producer = 4;
  EXPECT_FALSE(check_cq_windows(cut, &why));
  EXPECT_EQ(why, "CQ 7 carries 64 ring bytes, its indices say 96");
}

}  // namespace
}  // namespace crx::verbs_plugin
