// What crx reads from `criu lazy-pages`' log for the report: faults,
// pages copied, and which of them a task waited for.
#include <gtest/gtest.h>

#include "migrate/lazy_pages.hpp"

namespace {

using crx::migrate::lazy_stats_from_log;

TEST(MigrateLazyPagesLog, CountsCopiesFaultsAndPagesATaskWaitedFor) {
  // Shapes as CRIU 3.17.1's uffd.c writes them at -v4 (its LOG_PREFIX
  // "uffd: ", then lp_debug's "pid-uffd: "); the bare shape is accepted too.
  const char* log =
      "(00.000100) 51-9: Found 4096 pages to be handled by UFFD\n"
      "(00.010000) uffd: 51-9: #PF at 0x7f0000001000\n"
      "(00.010100) uffd: 51-9: uffd_copy: 0x7f0000001000/4096\n"
      // A background copy of 16 pages, one of them faulted on meanwhile.
      "(00.020000) uffd: 51-9: #PF at 0x7f0000013000\n"
      "(00.020100) uffd: 51-9: uffd_copy: 0x7f0000010000/65536\n"
      // Another task faults at the same address: its own page.
      "(00.030000) 52-11: #PF at 0x7f0000001000\n"
      "(00.030100) 52-11: uffd_copy: 0x7f0000001000/4096\n"
      // A fault on a page no image has: a zero page, not copied.
      "(00.040000) 51-9: #PF at 0x7f00000ff000\n"
      "(00.040001) 51-9: zero page at 0x7f00000ff000\n"
      "(00.050000) 51-9: UFFD transferred pages: (18/4096)\n"
      "(00.050000) Error (criu/uffd.c:1): not a task line\n"
      "garbage\n";
  auto s = lazy_stats_from_log(log);
  EXPECT_EQ(s.faults, 4u);
  EXPECT_EQ(s.pages, 18u);
  EXPECT_EQ(s.on_demand_pages, 3u);
  EXPECT_EQ(s.pushed_pages(), 15u);
}

TEST(MigrateLazyPagesLog, EmptyOrForeignLogIsZero) {
  auto s = lazy_stats_from_log("");
  EXPECT_EQ(s.pages, 0u);
  s = lazy_stats_from_log("(00.1) 12-x: uffd_copy: 0x10/4096\n(junk\n");
  EXPECT_EQ(s.pages, 0u);
  EXPECT_EQ(s.faults, 0u);
}

}  // namespace
