// checkpoint::CgroupYard against the host's cgroup2 hierarchy: the yard
// shows the hierarchy from its root at `unified`, as CRIU's own cgroup2
// mount would, without touching the superblock's options; gone, it leaves
// no mount and no directory, also of what CRIU mounted beside it.
#include "checkpoint/cgroup_yard.hpp"

#include <sys/mount.h>
#include <sys/stat.h>

#include <optional>

#include "cgroup/root_options.hpp"
#include "common/error.hpp"
#include "common/fs.hpp"
#include "common/scope_guard.hpp"
#include "harness.hpp"
#include "state/store.hpp"

namespace crx::test {
namespace {

// Mount points at or below dir, from this process's mountinfo.
std::vector<std::string> mounts_below(const std::string& dir) {
  std::vector<std::string> out;
  std::istringstream lines(read_file("/proc/self/mountinfo"));
  for (std::string line; std::getline(lines, line);) {
    std::istringstream f(line);
    std::string id, parent, dev, root, point;
    if (!(f >> id >> parent >> dev >> root >> point)) continue;
    if (point == dir || point.starts_with(dir + "/")) out.push_back(point);
  }
  return out;
}

TEST(CgroupYard, ShowsTheHierarchyAndLeavesNothing) {
  CRX_REQUIRE_ROOT();
  std::optional<cgroup::RootOptions> host = cgroup::RootOptions::of_host();
  if (!host || !path_exists(host->mountpoint() + "/cgroup.controllers"))
    GTEST_SKIP() << "no cgroup2 hierarchy at /sys/fs/cgroup";
  TempDir parent("crx-cgyard");
  // Whatever a failed test leaves mounted goes before the TempDir's
  // removal, which must never reach into the hierarchy.
  ScopeGuard detach([&] { state::detach_mounts_below(parent.path()); });
  const std::string at = parent.path() + "/yard";
  {
    checkpoint::CgroupYard yard(at, host->mountpoint());
    EXPECT_EQ(yard.path(), at);
    EXPECT_EQ(mounts_below(parent.path()), std::vector<std::string>{at + "/unified"});
    // The hierarchy's root: the same directory as the host's mount.
    struct stat a{}, b{};
    ASSERT_EQ(::stat((at + "/unified").c_str(), &a), 0);
    ASSERT_EQ(::stat(host->mountpoint().c_str(), &b), 0);
    EXPECT_EQ(a.st_ino, b.st_ino);
    EXPECT_EQ(a.st_dev, b.st_dev);
    EXPECT_EQ(cgroup::RootOptions::of_host(), host) << "the superblock's options changed";
    // What CRIU mounts beside `unified` for a hierarchy the host lacks.
    ASSERT_EQ(::mkdir((at + "/cpu").c_str(), 0700), 0);
    ASSERT_EQ(::mount("none", (at + "/cpu").c_str(), "tmpfs", 0, nullptr), 0);
  }
  EXPECT_TRUE(mounts_below(parent.path()).empty());
  EXPECT_FALSE(path_exists(at));
  EXPECT_TRUE(path_exists(host->mountpoint() + "/cgroup.controllers"));
}

// A yard that cannot be made throws with the errno and leaves nothing.
TEST(CgroupYard, AFailureLeavesNothing) {
  CRX_REQUIRE_ROOT();
  std::optional<cgroup::RootOptions> host = cgroup::RootOptions::of_host();
  if (!host) GTEST_SKIP() << "no cgroup2 hierarchy";
  TempDir parent("crx-cgyard");
  ScopeGuard detach([&] { state::detach_mounts_below(parent.path()); });
  try {
    checkpoint::CgroupYard yard(parent.path() + "/yard", parent.path() + "/no-such-mount");
    ADD_FAILURE() << "a yard was made from a mount point that does not exist";
  } catch (const Error& e) {
    EXPECT_EQ(e.sys_errno(), ENOENT) << e.what();
    EXPECT_NE(std::string(e.what()).find("no-such-mount"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(mounts_below(parent.path()).empty());
  EXPECT_FALSE(path_exists(parent.path() + "/yard"));
}

}  // namespace
}  // namespace crx::test
