// remove_tree against real mounts: it removes a state directory's files
// but never enters a mount below it, not even a bind mount of the same
// file system (which a device-number check would walk into), so a mount a
// caller failed to detach cannot cost what it shows.
#include <sys/mount.h>

#include "common/error.hpp"
#include "common/fs.hpp"
#include "common/scope_guard.hpp"
#include "harness.hpp"

namespace crx::test {
namespace {

TEST(RemoveTree, StopsAtABindMountOfTheSameFileSystem) {
  CRX_REQUIRE_ROOT();
  TempDir shown("crx-rmtree-shown");
  TempDir tree("crx-rmtree");
  write_file(shown / "precious", "x");
  mkdir_p(tree / "a/at", 0700);
  write_file(tree / "a/mine", "x");
  ASSERT_EQ(::mount(shown.path().c_str(), (tree / "a/at").c_str(), nullptr, MS_BIND, nullptr), 0)
      << std::strerror(errno);
  ScopeGuard detach([&] { ::umount2((tree / "a/at").c_str(), MNT_DETACH); });

  try {
    remove_tree(tree.path());
    FAIL() << "expected remove_tree to stop at " << (tree / "a/at");
  } catch (const Error& e) {
    EXPECT_EQ(e.cause(), Cause::Busy) << e.what();
    EXPECT_EQ(e.sys_errno(), EBUSY);
    EXPECT_NE(std::string(e.what()).find(tree / "a/at"), std::string::npos) << e.what();
  }
  EXPECT_TRUE(path_exists(shown / "precious"));

  // Detached, the rest goes.
  ASSERT_EQ(::umount2((tree / "a/at").c_str(), MNT_DETACH), 0);
  remove_tree(tree.path());
  EXPECT_FALSE(path_exists(tree.path()));
  EXPECT_TRUE(path_exists(shown / "precious"));
}

}  // namespace
}  // namespace crx::test
