// What a restore whose crx died leaves in the container's cgroup (root, host
// cgroups): killed by the guard when its owner dies, and by the next
// receiver's sweep (checkpoint/restore_guard.hpp), frozen tasks included;
// nothing of the container is left afterwards.
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cerrno>
#include <string>

#include "checkpoint/restore_guard.hpp"
#include "common/fs.hpp"
#include "harness.hpp"
#include "cgroup/cgroup.hpp"
#include "migrate/stale_sessions.hpp"
#include "../support/reap.hpp"

#include <nlohmann/json.hpp>

namespace {

using namespace crx::test;
namespace ck = crx::checkpoint;

using crx::testing::sleeper;

using crx::testing::reap;

std::vector<std::string> dirs_of(const crx::cgroup::Cgroup& cg) {
  std::vector<std::string> out;
  for (const auto& [ctrl, dir] : cg.dirs()) out.push_back(dir);
  return out;
}

TEST(RestoreLeftovers, TheSweepKillsTheHalfRestoredCgroupAndRemovesIt) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root";
  std::string id = unique_id("rsweep");
  auto cg = crx::cgroup::Cgroup::create("", id, false, nullptr);
  std::string state_dir = state_root() + "/" + id;
  ASSERT_EQ(::mkdir(state_dir.c_str(), 0711), 0);
  ck::record_restoring_cgroup(state_dir, cg.save().dump());
  pid_t a = sleeper(), b = sleeper();
  cg.add_process(a);
  cg.add_process(b);
  cg.freeze();  // held by CRIU's pre-resume, or paused again
  auto lines = ck::remove_unfinished_restore(state_dir, "/nonexistent/crx-images");
  std::string all;
  for (const auto& l : lines) all += l + "\n";
  EXPECT_NE(all.find("killed "), std::string::npos) << all;
  EXPECT_NE(all.find("removed the cgroup"), std::string::npos) << all;
  for (pid_t p : {a, b}) {
    int st = reap(p);
    EXPECT_TRUE(st >= 0 && WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL) << st;
  }
  crx::remove_tree(state_dir);  // delete --force does this in the sweep
  expect_nothing_left(id);
}

TEST(RestoreLeftovers, TheGuardKillsTheCgroupWhenItsOwnerDies) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root";
  std::string id = unique_id("rguard");
  auto cg = crx::cgroup::Cgroup::create("", id, false, nullptr);
  pid_t task = sleeper();
  cg.add_process(task);
  int p[2];
  ASSERT_EQ(::pipe(p), 0);
  pid_t owner = ::fork();
  if (owner == 0) {
    ::close(p[0]);
    ck::RestoreGuard g(ck::RestoreLeftovers{dirs_of(cg), "", true});
    (void)!::write(p[1], "r", 1);
    for (;;) ::pause();
  }
  ::close(p[1]);
  char c;
  ASSERT_EQ(::read(p[0], &c, 1), 1);
  ::close(p[0]);
  ASSERT_EQ(::kill(task, 0), 0);
  ASSERT_EQ(::kill(owner, SIGKILL), 0);
  reap(owner);
  int st = reap(task);
  ASSERT_NE(st, -1) << "the task in the cgroup outlived the guard's owner";
  EXPECT_TRUE(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL) << st;
  cg.destroy();
  expect_nothing_left(id);
}

TEST(RestoreLeftovers, TheSweepDetachesCriusMountsInADeadSessionsDir) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root";
  TempDir tmp("crx-rsess");
  const std::string& images = tmp.path();
  std::string session = images + "/c1-0123abcd";
  std::string yard = session + "/1.work/.criu.cgyard.abc";
  ASSERT_EQ(::mkdir(session.c_str(), 0700), 0);
  ASSERT_EQ(::mkdir((session + "/1.work").c_str(), 0700), 0);
  ASSERT_EQ(::mkdir(yard.c_str(), 0700), 0);
  // As CRIU killed mid-restore leaves it: a tmpfs, and read-only files in it.
  ASSERT_EQ(::mount("criu-yard", yard.c_str(), "tmpfs", 0, nullptr), 0);
  ASSERT_EQ(::mkdir((yard + "/unified").c_str(), 0555), 0);
  ASSERT_EQ(::mount("criu-yard", (yard + "/unified").c_str(), "tmpfs", MS_RDONLY, nullptr), 0);
  // A receiver that is gone: this pid with another start time.
  crx::write_file_atomic(session + "/receiver.json",
                         nlohmann::json{{"pid", ::getpid()}, {"start", 1}, {"id", "c1"},
                                        {"began", "2026-11-24T09:00:00Z"}, {"committed", false}}
                             .dump());
  crx::container::GlobalOptions g;
  g.root = state_root();
  auto lines = crx::migrate::sweep_stale_sessions(images, g);
  std::string all;
  for (const auto& l : lines) all += l + "\n";
  EXPECT_FALSE(crx::path_exists(session)) << all;
  EXPECT_EQ(read_text("/proc/self/mountinfo").find(session), std::string::npos) << all;
  crx::remove_tree(images);
}

}  // namespace
