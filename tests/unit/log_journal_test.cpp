// The text log under systemd: journal style only when stderr is the
// stream JOURNAL_STREAM names (common/log.hpp).
#include <gtest/gtest.h>

#include "common/log.hpp"

namespace crx::log {
namespace {

TEST(LogJournal, StreamMatchesOnlyItsDeviceAndInode) {
  EXPECT_TRUE(journal_stream_matches("8:1234", 8, 1234));
  EXPECT_FALSE(journal_stream_matches("8:1234", 8, 1235));
  EXPECT_FALSE(journal_stream_matches("9:1234", 8, 1234));
  EXPECT_FALSE(journal_stream_matches(nullptr, 8, 1234));
  EXPECT_FALSE(journal_stream_matches("", 8, 1234));
  EXPECT_FALSE(journal_stream_matches("8:1234x", 8, 1234));
  EXPECT_FALSE(journal_stream_matches("8", 8, 1234));
}

TEST(LogJournal, JournalLinesCarryPriorityAndNoTimestamp) {
  EXPECT_EQ(format_text_line(Level::Error, "key missing", true), "<3>error: key missing\n");
  EXPECT_EQ(format_text_line(Level::Warn, "w", true), "<4>warning: w\n");
  EXPECT_EQ(format_text_line(Level::Info, "i", true), "<6>info: i\n");
  EXPECT_EQ(format_text_line(Level::Debug, "d", true), "<7>debug: d\n");
  std::string plain = format_text_line(Level::Error, "key missing", false);
  EXPECT_TRUE(plain.ends_with("Z error: key missing\n")) << plain;
  EXPECT_EQ(plain[4], '-');  // an RFC 3339 time first
}

}  // namespace
}  // namespace crx::log
