// crx migrate --on-freeze: the hook runs after the freeze and before the
// dump, and its failure fails the freeze (migrate/freeze_hook.hpp). The
// rollback a failed hook leads to: migrate_protocol_test.
#include "migrate/freeze_hook.hpp"

#include <gtest/gtest.h>
#include <unistd.h>

#include "common/error.hpp"
#include "common/fs.hpp"

namespace {

using namespace crx::migrate;
using namespace std::chrono_literals;

// Leaves a file behind when frozen, so the hook can tell it ran after.
struct MarkingSource : SourceSide {
  std::unique_ptr<crx::migrate::LazyDump> lazy_dump(const std::string&, crx::UniqueFd) override {
    throw crx::Error("no post-copy here");
  }
  crx::migrate::RoundStats last_round() const override { return {}; }
  bool zero_runs(bool decodes) override { return decodes; }
  bool compress_pages(bool decodes) override { return decodes; }
  void destination_makes_uts_ipc(bool) override {}
  void destination_takes_late_state(bool) override {}
  void destination_has_elf_files(bool) override {}
  void destination_cgroup(const std::string&) override {}
  crx::migrate::LateState late_state() override { return {}; }
  std::string marker;
  int freezes = 0, dumps = 0, resumes = 0;
  void pre_dump(const std::string&, const std::string&, int) override {}
  int prepared_dumps = 0;
  void prepare_dump(const std::string&, const std::string&, int) override { ++prepared_dumps; }
  void freeze() override {
    ++freezes;
    crx::write_file(marker, "frozen");
  }
  ParentPages parent_pages = ParentPages::Trust;
  void dump(const std::string&, const std::string&, int, ParentPages p) override {
    ++dumps;
    parent_pages = p;
  }
  void resume() override { ++resumes; }
  void destroy() override {}
};

struct HookTest : ::testing::Test {
  std::string dir;
  MarkingSource inner;
  void SetUp() override {
    char tmpl[] = "/tmp/crx-freeze-hook-XXXXXX";
    dir = ::mkdtemp(tmpl);
    inner.marker = dir + "/frozen";
  }
  void TearDown() override { crx::remove_tree(dir); }
};

TEST_F(HookTest, RunsAfterTheFreezeWithTheContainersId) {
  FreezeHookSource s(inner, "test -f '" + inner.marker + "' && echo \"$CRX_MIGRATE_ID\" > '" +
                                dir + "/seen'",
                     "c1", 10s);
  s.freeze();
  EXPECT_EQ(inner.freezes, 1);
  EXPECT_EQ(crx::read_file(dir + "/seen"), "c1\n");
  s.dump("", "", -1, ParentPages::Check);
  EXPECT_EQ(inner.dumps, 1) << "the other calls go to the inner side";
  EXPECT_EQ(inner.parent_pages, ParentPages::Check) << "with what they were given";
}

TEST_F(HookTest, ANonZeroExitFailsTheFreezeNamingTheCommand) {
  FreezeHookSource s(inner, "exit 3", "c1", 10s);
  try {
    s.freeze();
    FAIL() << "a failed hook must fail the freeze";
  } catch (const crx::Error& e) {
    EXPECT_EQ(std::string(e.what()), "--on-freeze: the command exited 3: exit 3");
  }
  EXPECT_EQ(inner.freezes, 1) << "frozen first: the migration's rollback resumes it";
}

TEST_F(HookTest, AHookThatHangsIsKilledAtTheTimeout) {
  FreezeHookSource s(inner, "echo $$ > '" + dir + "/pid'; exec sleep 30", "c1", 300ms);
  auto t0 = std::chrono::steady_clock::now();
  try {
    s.freeze();
    FAIL() << "a hook past its time must fail the freeze";
  } catch (const crx::Error& e) {
    EXPECT_EQ(e.cause(), crx::Cause::TimedOut) << e.what();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - t0, 10s);
  pid_t pid = std::stoi(crx::read_file(dir + "/pid"));
  EXPECT_NE(::kill(pid, 0), 0) << "the hook must be gone (killed and reaped)";
}

}  // namespace
