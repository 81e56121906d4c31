// The plugin's image format: what encode() writes, decode() reads back,
// and decode() refuses what it cannot trust.
#include "image.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>

#include "test_dumps.hpp"

namespace crx::verbs_plugin {
namespace {

Image sample_context() {
  Image img;
  img.kind = ImageKind::Context;
  img.ctx_id = 33;
  img.device = "rxe0";
  img.cdev_path = "/dev/infiniband/uverbs0";
  img.queues = {{3, 4, 0x3000, 0x1000}, {1, 1, 0x1000, 0x2000}};
  img.dump = test::DumpBuilder().pd(1).mr(2).dump();
  return img;
}

std::vector<uint8_t> encoded(const Image& img) {
  std::string why;
  auto bytes = encode(img, &why);
  EXPECT_TRUE(bytes) << why;
  return bytes.value_or(std::vector<uint8_t>{});
}

TEST(PluginImage, ContextRoundTrip) {
  std::string why;
  auto back = decode(encoded(sample_context()), &why);
  ASSERT_TRUE(back) << why;
  EXPECT_EQ(back->kind, ImageKind::Context);
  EXPECT_EQ(back->ctx_id, 33u);
  EXPECT_EQ(back->device, "rxe0");
  EXPECT_EQ(back->cdev_path, "/dev/infiniband/uverbs0");
  ASSERT_EQ(back->queues.size(), 2u);
  EXPECT_EQ(back->queues[0].which, 3u);
  EXPECT_EQ(back->queues[0].handle, 4u);
  EXPECT_EQ(back->queues[0].offset, 0x3000u);
  EXPECT_EQ(back->queues[1].size, 0x2000u);
  EXPECT_EQ(back->dump, sample_context().dump);
}

TEST(PluginImage, EventRoundTrip) {
  Image img;
  img.kind = ImageKind::Event;
  img.ctx_id = 33;
  img.evt_type = 7;
  img.evt_handle = 0xdeadbeef;
  std::string why;
  auto back = decode(encoded(img), &why);
  ASSERT_TRUE(back) << why;
  EXPECT_EQ(back->kind, ImageKind::Event);
  EXPECT_EQ(back->evt_type, 7u);
  EXPECT_EQ(back->evt_handle, 0xdeadbeefu);
  EXPECT_TRUE(back->dump.empty());
}

TEST(PluginImage, LongDeviceNameIsCutNotOverflowed) {
  Image img = sample_context();
  img.device = std::string(200, 'x');
  std::string why;
  auto back = decode(encoded(img), &why);
  ASSERT_TRUE(back) << why;
  EXPECT_EQ(back->device, std::string(63, 'x'));
}

TEST(PluginImage, RefusesWhatItCannotTrust) {
  std::vector<uint8_t> good = encoded(sample_context());
  std::string why;

  EXPECT_FALSE(decode({1, 2, 3}, &why));
  EXPECT_EQ(why, "shorter than its header");

  auto bad = good;
  bad[0] = 'X';
  EXPECT_FALSE(decode(bad, &why));
  EXPECT_EQ(why, "bad magic");

  bad = good;
  bad[4] = 9;  // version
  EXPECT_FALSE(decode(bad, &why));
  EXPECT_NE(why.find("image version 9"), std::string::npos);

  bad = good;
  bad[8] = 5;  // kind
  EXPECT_FALSE(decode(bad, &why));
  EXPECT_NE(why.find("unknown kind"), std::string::npos);

  bad = good;
  bad.pop_back();  // truncated dump
  EXPECT_FALSE(decode(bad, &why));
  EXPECT_NE(why.find("does not match"), std::string::npos);

  bad = good;
  bad[24] = 200;  // nqueues far beyond the bytes there are
  EXPECT_FALSE(decode(bad, &why));
}

// Found by tests/fuzz (fuzz_verbs_image): a name filling all 64 bytes of
// its field decoded to 64 characters, which encode() cannot write back.
TEST(PluginImage, RefusesADeviceNameWithoutItsNul) {
  std::vector<uint8_t> good = encoded(sample_context());
  std::string why;
  for (size_t field : {32u, 96u}) {  // device, cdev_path
    auto bad = good;
    std::fill(bad.begin() + field, bad.begin() + field + 64, 'x');
    EXPECT_FALSE(decode(bad, &why)) << field;
    EXPECT_EQ(why, "device name without its terminating NUL");
  }
}

// The image carries a CQ's live window only (cq_window.hpp): the
// restore gets the window back in its slots.
TEST(PluginImage, ContextCarriesItsCqWindowsOnly) {
  Image img = sample_context();
  img.dump = test::DumpBuilder().pd(1).cq_window(2, 64, 128, 5, 3).dump();
  const std::vector<uint8_t> full = test::DumpBuilder().pd(1).cq(2, 64, 128, 5, 3).dump();
  std::vector<uint8_t> bytes = encoded(img);
  // header, two queue maps, the dump as it is: two entries of the ring
  EXPECT_EQ(bytes.size(), 160 + 2 * 24 + img.dump.size());
  EXPECT_EQ(full.size() - img.dump.size(), 62u * 128);
  // and back as it is: REFILL puts the entries in their slots
  // (IBV_MIGR_RESTORE_CQ_WINDOW, cq_window_test.cpp)
  std::string why;
  auto back = decode(bytes, &why);
  ASSERT_TRUE(back) << why;
  EXPECT_EQ(back->dump, img.dump);
}

TEST(PluginImage, RefusesToDecodeAWholeCqRing) {
  Image img = sample_context();
  std::vector<uint8_t> bytes = encoded(img);
  // the image's dump replaced by one with a whole ring, its length fixed
  const std::vector<uint8_t> whole = test::DumpBuilder().pd(1).cq(2, 64, 128, 5, 3).dump();
  const size_t at = 160 + 2 * 24;
  bytes.resize(at);
  bytes.insert(bytes.end(), whole.begin(), whole.end());
  const uint32_t len = static_cast<uint32_t>(whole.size());
  std::memcpy(bytes.data() + 28, &len, sizeof(len));  // Header::dump_len
  std::string why;
  EXPECT_FALSE(decode(bytes, &why));
  EXPECT_EQ(why, "CQ 2 carries 8192 ring bytes, its indices say 256");
}

TEST(PluginImage, RefusesAContextWithAWholeCqRing) {
  // a kernel without rxe-patches 0027 would dump it so
  Image img = sample_context();
  img.dump = test::DumpBuilder().pd(1).cq(2, 64, 128, 5, 3).dump();
  std::string why;
  EXPECT_FALSE(encode(img, &why));
  EXPECT_EQ(why, "CQ 2 carries 8192 ring bytes, its indices say 256");
}

TEST(PluginImage, RefusesAContextWhoseDumpItCannotCheck) {
  Image img = sample_context();
  img.dump = {1, 2, 3, 4, 5, 6, 7, 8};
  std::string why;
  EXPECT_FALSE(encode(img, &why));
  EXPECT_EQ(why, "dump shorter than its header");
}

TEST(PluginImage, NameIsPerCriuFileId) { EXPECT_EQ(image_name(33), "crx-verbs-33.img"); }

}  // namespace
}  // namespace crx::verbs_plugin
