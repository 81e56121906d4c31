// `crx delete --force` of a container whose restore was killed (issue 16):
// the state dir has no state.json, only the cgroup record the restore wrote
// (checkpoint/restore_guard.hpp), CRIU's mounts, and in that cgroup the
// tasks restored so far.
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../support/reap.hpp"
#include "checkpoint/restore_guard.hpp"
#include "harness.hpp"
#include "cgroup/cgroup.hpp"

namespace crx::test {
namespace {

using crx::testing::sleeper;

// Issue 16: a restore killed before it saved state.json leaves a state dir
// with only its cgroup record (restore-cgroup.json), CRIU's mounts and the
// tasks restored so far, frozen or stopped, in that cgroup. delete --force
// kills them and removes the cgroup, the mounts and the dir.
TEST(DeleteHalfRestored, ForceKillsWhatIsInTheRecordedCgroupAndRemovesIt) {
  CRX_REQUIRE_ROOT();
  std::string id = unique_id("rkilled");
  auto cg = cgroup::Cgroup::create("", id, false, nullptr);
  std::string state_dir = state_root() + "/" + id;
  ASSERT_EQ(::mkdir(state_dir.c_str(), 0711), 0);
  checkpoint::record_restoring_cgroup(state_dir, cg.save().dump());
  std::string staged = state_dir + "/criu-tmpfs";
  ASSERT_EQ(::mkdir(staged.c_str(), 0700), 0);
  ASSERT_EQ(::mount("crx-staged", staged.c_str(), "tmpfs", 0, nullptr), 0);
  pid_t a = sleeper(), b = sleeper();
  cg.add_process(a);
  cg.add_process(b);
  cg.freeze();

  auto r = run_crx({"delete", "--force", id});
  EXPECT_EQ(r.status, 0) << r.err;
  for (pid_t p : {a, b}) {
    int st = crx::testing::reap(p);
    EXPECT_TRUE(st >= 0 && WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL) << "pid " << p << ": " << st;
    if (st == -1) {
      cg.thaw();
      ::kill(p, SIGKILL);
      crx::testing::reap(p);
    }
  }
  expect_nothing_left(id);
  if (!cgroup_dirs_named(id).empty()) cg.destroy();
}

}  // namespace
}  // namespace crx::test
