// The init->parent sync channel carries an error's cause, not only its
// text: the parent decides on errno and Cause as the child would have.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <stdexcept>

#include "common/error.hpp"
#include "container/sync.hpp"

namespace {

using crx::Cause;
using crx::container::SyncChannel;
using crx::container::SyncType;

// What the parent end gets when a child process fails with `thrown`.
template <class Thrown>
crx::Error error_across_the_channel(const Thrown& thrown) {
  auto [parent_end, child_end] = SyncChannel::make_pair();
  pid_t pid = ::fork();
  if (pid == 0) {
    parent_end.close();
    try {
      throw thrown;
    } catch (const std::exception& e) {
      child_end.send_error(e);
    }
    ::_exit(0);
  }
  child_end.close();
  try {
    parent_end.expect(SyncType::Created);
  } catch (const crx::Error& e) {
    ::waitpid(pid, nullptr, 0);
    return e;
  }
  ::waitpid(pid, nullptr, 0);
  ADD_FAILURE() << "expected an error";
  return crx::Error("");
}

TEST(SyncChannel, ErrnoAndCauseCrossWithTheText) {
  crx::Error e = error_across_the_channel(crx::Error("mount proc on /proc: Permission denied", EACCES));
  EXPECT_STREQ(e.what(), "mount proc on /proc: Permission denied");
  EXPECT_EQ(e.sys_errno(), EACCES);
  EXPECT_EQ(e.cause(), Cause::Permission);
}

TEST(SyncChannel, AnExplicitCauseCrosses) {
  crx::Error e = error_across_the_channel(crx::Error("exec /no/such: not found", Cause::NotFound));
  EXPECT_STREQ(e.what(), "exec /no/such: not found");
  EXPECT_EQ(e.sys_errno(), 0);
  EXPECT_EQ(e.cause(), Cause::NotFound);
}

TEST(SyncChannel, AnotherExceptionCrossesAsTextOnly) {
  crx::Error e = error_across_the_channel(std::runtime_error("bad json"));
  EXPECT_STREQ(e.what(), "bad json");
  EXPECT_EQ(e.sys_errno(), 0);
  EXPECT_EQ(e.cause(), Cause::Other);
}

}  // namespace
