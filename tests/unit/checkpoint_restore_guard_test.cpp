// checkpoint/restore_guard: the tasks a restore leaves when its crx dies
// (found by CRIU's title here; by cgroup in tests/host) are killed by the
// guard, and only then.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <string>

#include "checkpoint/restore_guard.hpp"
#include "common/fs.hpp"
#include "common/retry_eintr.hpp"
#include "../support/reap.hpp"
#include "../support/temp_dir.hpp"

namespace {

using crx::checkpoint::kill_restore_leftovers;
using crx::checkpoint::restore_title;
using crx::checkpoint::RestoreGuard;
using crx::checkpoint::RestoreLeftovers;

// A process whose cmdline starts with title (as CRIU's forked tasks');
// returns once it has exec'd.
pid_t titled_sleeper(const std::string& title) {
  int p[2];
  if (::pipe2(p, O_CLOEXEC) != 0) return -1;
  pid_t pid = ::fork();
  if (pid == 0) {
    ::execl("/bin/sleep", title.c_str(), "600", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  ::close(p[1]);
  char c;
  crx::retry_eintr([&] { return ::read(p[0], &c, 1); });
  ::close(p[0]);
  return pid;
}

bool alive(pid_t pid) {
  std::string stat;
  try {
    stat = crx::read_file("/proc/" + std::to_string(pid) + "/stat");
  } catch (...) {
    return false;
  }
  auto close = stat.rfind(')');
  return close != std::string::npos && close + 2 < stat.size() && stat[close + 2] != 'Z' &&
         stat[close + 2] != 'X';
}

using crx::testing::reap;

class RestoreGuardTest : public ::testing::Test {
 protected:
  void SetUp() override {
    images = base + "/1";
    ASSERT_EQ(::mkdir(images.c_str(), 0700), 0);
    // Orphans of the owner below come to us, so that we can reap them.
    ASSERT_EQ(::prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
  }
  void TearDown() override { ::prctl(PR_SET_CHILD_SUBREAPER, 0); }

  // Forks the "restoring crx": a guard, then one task with CRIU's title;
  // with disarm the guard is disarmed before it reports. Reports the
  // task's and the guard's pids, then waits to be killed.
  pid_t owner(bool disarm, pid_t* task, pid_t* guard) {
    int p[2];
    EXPECT_EQ(::pipe(p), 0);
    pid_t pid = ::fork();
    if (pid == 0) {
      ::close(p[0]);
      RestoreGuard g(RestoreLeftovers{{}, restore_title(images), true});
      pid_t ids[2] = {titled_sleeper(restore_title(images)), g.pid()};
      if (disarm) g.disarm();
      (void)!::write(p[1], ids, sizeof ids);
      for (;;) ::pause();
    }
    ::close(p[1]);
    pid_t ids[2] = {0, 0};
    EXPECT_EQ(::read(p[0], ids, sizeof ids), static_cast<ssize_t>(sizeof ids));
    ::close(p[0]);
    *task = ids[0];
    *guard = ids[1];
    return pid;
  }

  crx::test::TempDir tmp{"crx-guard"};
  std::string base = tmp.path(), images;
};

TEST_F(RestoreGuardTest, TitleIsCriusWithTheRealPath) {
  std::string link = base + "/link";
  ASSERT_EQ(::symlink(images.c_str(), link.c_str()), 0);
  char real[PATH_MAX];
  ASSERT_NE(::realpath(images.c_str(), real), nullptr);
  EXPECT_EQ(restore_title(link), std::string("criu: restore --rpc -D ") + real);
}

TEST_F(RestoreGuardTest, KillsTheRestoresTasksWhenItsOwnerDies) {
  // Another restore's task (images dir .../10): must stay.
  pid_t other = titled_sleeper(restore_title(base) + "/10");
  pid_t task = 0, guard = 0;
  pid_t crx = owner(false, &task, &guard);
  ASSERT_GT(task, 0);
  ASSERT_GT(guard, 0);
  ASSERT_TRUE(alive(task));
  ASSERT_EQ(::kill(crx, SIGKILL), 0);
  int st = reap(crx);
  EXPECT_TRUE(WIFSIGNALED(st));
  st = reap(task);
  ASSERT_NE(st, -1) << "the restore's task outlived its crx";
  EXPECT_TRUE(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL) << st;
  st = reap(guard);
  EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << st;
  EXPECT_TRUE(alive(other)) << "a task of another images dir was killed";
  ::kill(other, SIGKILL);
  reap(other);
}

TEST_F(RestoreGuardTest, ADisarmedGuardIsGoneAndKillsNothing) {
  pid_t task = 0, guard = 0;
  pid_t crx = owner(true, &task, &guard);
  ASSERT_GT(task, 0);
  EXPECT_FALSE(alive(guard)) << "disarm() reaps the guard";
  ASSERT_EQ(::kill(crx, SIGKILL), 0);
  reap(crx);
  EXPECT_TRUE(alive(task));
  ::kill(task, SIGKILL);
  EXPECT_NE(reap(task), -1);
}

TEST_F(RestoreGuardTest, SweepKillsEveryRoundOfASession) {
  // The next receiver's sweep: any images dir below the session's.
  pid_t r1 = titled_sleeper(restore_title(images));
  pid_t r2 = titled_sleeper(restore_title(base) + "/2");
  pid_t other = titled_sleeper(restore_title(base) + "x/1");
  auto lines = crx::checkpoint::remove_unfinished_restore("", base);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0].rfind("killed ", 0), 0u) << lines[0];
  int st = reap(r1);
  EXPECT_TRUE(WIFSIGNALED(st)) << st;
  st = reap(r2);
  EXPECT_TRUE(WIFSIGNALED(st)) << st;
  EXPECT_TRUE(alive(other));
  ::kill(other, SIGKILL);
  reap(other);
}

TEST(RestoreLeftovers, NothingToKill) {
  EXPECT_EQ(kill_restore_leftovers(RestoreLeftovers{{"/nonexistent/cg"}, "", true}), 0);
}

}  // namespace
