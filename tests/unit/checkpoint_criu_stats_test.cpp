// CRIU's statistics images (checkpoint/criu_stats.hpp), written here the
// way CRIU writes them: the two magics, a length, the protobuf message.
#include <gtest/gtest.h>

#include <cstring>
#include <string>

#include "../support/temp_dir.hpp"
#include "checkpoint/criu_stats.hpp"
#include "common/error.hpp"
#include "common/fs.hpp"
#include "criu_stats_images.hpp"

namespace {

using crx::checkpoint::parse_criu_dump_stats;
using crx::checkpoint::parse_criu_restore_stats;

using crx::test::criu_stats_image;
using crx::test::criu_u32;

std::string dump_image() {
  CrxCriuDumpStats d = CRX_CRIU_DUMP_STATS__INIT;
  d.has_freezing_time = d.has_frozen_time = d.has_memdump_time = d.has_memwrite_time = true;
  d.freezing_time = 12000;
  d.frozen_time = 2500000;
  d.memdump_time = 800000;
  d.memwrite_time = 300000;
  d.has_pages_scanned = d.has_pages_skipped_parent = d.has_pages_written = true;
  d.pages_scanned = 19000;
  d.pages_skipped_parent = 17000;
  d.pages_written = 2000;
  CrxCriuStats m = CRX_CRIU_STATS__INIT;
  m.dump = &d;
  return criu_stats_image(m);
}

std::string restore_image() { return crx::test::criu_restore_stats_image(250000, 1750000, 4096); }

crx::Cause cause_of(const std::string& image) {
  try {
    parse_criu_dump_stats(image);
  } catch (const crx::Error& e) {
    EXPECT_NE(std::string(e.what()).find("CRIU's statistics image"), std::string::npos) << e.what();
    return e.cause();
  }
  return crx::Cause::Other;
}

TEST(CriuStats, DumpTimesInSecondsAndPageCounts) {
  auto s = parse_criu_dump_stats(dump_image());
  EXPECT_DOUBLE_EQ(s.freezing_seconds, 0.012);
  EXPECT_DOUBLE_EQ(s.frozen_seconds, 2.5);
  EXPECT_DOUBLE_EQ(s.memdump_seconds, 0.8);
  EXPECT_DOUBLE_EQ(s.memwrite_seconds, 0.3);
  EXPECT_EQ(s.pages_scanned, 19000u);
  EXPECT_EQ(s.pages_skipped_parent, 17000u);
  EXPECT_EQ(s.pages_written, 2000u);
}

TEST(CriuStats, RestoreTimes) {
  auto s = parse_criu_restore_stats(restore_image());
  EXPECT_DOUBLE_EQ(s.forking_seconds, 0.25);
  EXPECT_DOUBLE_EQ(s.restore_seconds, 1.75);
  EXPECT_EQ(s.pages_restored, 4096u);
}

TEST(CriuStats, FieldsCrxDoesNotReadAreSkipped) {
  // CRIU's dump entry has more fields (irmap_resolve = 8, pages_lazy = 9,
  // ...): a varint field 9 appended to the dump message still parses.
  std::string img = dump_image();
  std::string body = img.substr(12);
  // the outer message: field 1, length-delimited (0x0a), then its length
  ASSERT_EQ(static_cast<uint8_t>(body[0]), 0x0a);
  uint8_t inner_len = static_cast<uint8_t>(body[1]);
  ASSERT_LT(inner_len, 0x7e);  // one-byte length, room for two more
  body[1] = static_cast<char>(inner_len + 2);
  body.insert(2 + inner_len, std::string("\x48\x07", 2));  // field 9, varint 7
  img = img.substr(0, 8) + criu_u32(static_cast<uint32_t>(body.size())) + body;
  EXPECT_DOUBLE_EQ(parse_criu_dump_stats(img).frozen_seconds, 2.5);
}

TEST(CriuStats, RefusesWhatIsNotAStatsImage) {
  std::string img = dump_image();
  EXPECT_EQ(cause_of(img.substr(0, 10)), crx::Cause::Invalid);                      // short
  EXPECT_EQ(cause_of(criu_u32(0x54564319) + img.substr(4)), crx::Cause::Invalid);        // an image's magic
  EXPECT_EQ(cause_of(img.substr(0, img.size() - 1)), crx::Cause::Invalid);          // cut
  EXPECT_EQ(cause_of(img.substr(0, 12) + std::string(img.size() - 12, '\xff')), crx::Cause::Invalid);
  // a restore image holds no dump part, and the other way round
  EXPECT_EQ(cause_of(restore_image()), crx::Cause::Invalid);
  EXPECT_THROW(parse_criu_restore_stats(img), crx::Error);
}

TEST(CriuStats, ReadFromTheWorkDirOrNothing) {
  crx::test::TempDir dir("crx-criu-stats");
  EXPECT_FALSE(crx::checkpoint::read_criu_dump_stats(dir.path()));
  crx::write_file_atomic(dir / "stats-dump", "not an image");
  EXPECT_FALSE(crx::checkpoint::read_criu_dump_stats(dir.path()));
  crx::write_file_atomic(dir / "stats-dump", dump_image());
  crx::write_file_atomic(dir / "stats-restore", restore_image());
  ASSERT_TRUE(crx::checkpoint::read_criu_dump_stats(dir.path()));
  EXPECT_DOUBLE_EQ(crx::checkpoint::read_criu_dump_stats(dir.path())->memdump_seconds, 0.8);
  ASSERT_TRUE(crx::checkpoint::read_criu_restore_stats(dir.path()));
  EXPECT_EQ(crx::checkpoint::read_criu_restore_stats(dir.path())->pages_restored, 4096u);
}

}  // namespace
