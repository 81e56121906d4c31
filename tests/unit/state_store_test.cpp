// The state store says "does not exist" only when the container's files are
// not there; any other failure to read them is reported as it is.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "common/error.hpp"
#include "state/store.hpp"
#include "../support/temp_dir.hpp"

namespace {

using crx::Cause;
using crx::state::StateDir;

class StateStore : public ::testing::Test {
 protected:
  crx::test::TempDir tmp_{"crx-store"};
  std::string root_ = tmp_.path();
};

template <class F>
crx::Error error_of(F&& f) {
  try {
    f();
  } catch (const crx::Error& e) {
    return e;
  }
  ADD_FAILURE() << "expected an error";
  return crx::Error("");
}

TEST_F(StateStore, AMissingContainerIsNotFound) {
  crx::Error e = error_of([&] { StateDir::open(root_, "nope"); });
  EXPECT_STREQ(e.what(), "container nope does not exist");
  EXPECT_EQ(e.cause(), Cause::NotFound);
}

TEST_F(StateStore, ASecondCreateIsExists) {
  StateDir first = StateDir::create(root_, "twice");
  crx::Error e = error_of([&] { StateDir::create(root_, "twice"); });
  EXPECT_STREQ(e.what(), "container with id twice already exists");
  EXPECT_EQ(e.cause(), Cause::Exists);
}

TEST_F(StateStore, NoStateFileIsNotFound) {
  StateDir dir = StateDir::create(root_, "half");
  crx::Error e = error_of([&] { dir.load(); });
  EXPECT_STREQ(e.what(), "container half does not exist (no state.json; half-created? use delete --force)");
  EXPECT_EQ(e.cause(), Cause::NotFound);
}

TEST_F(StateStore, AnUnreadableStateFileIsNotTakenForAMissingOne) {
  StateDir dir = StateDir::create(root_, "odd");
  ASSERT_EQ(::mkdir((root_ + "/odd/state.json").c_str(), 0700), 0);  // read() gives EISDIR
  crx::Error e = error_of([&] { dir.load(); });
  EXPECT_EQ(e.sys_errno(), EISDIR) << e.what();
  EXPECT_EQ(std::string(e.what()).find("does not exist"), std::string::npos) << e.what();
}

TEST(ProcessAlive, ThisProcessRunsAndAnExitedOneDoesNot) {
  EXPECT_TRUE(crx::state::process_alive(::getpid(), crx::state::process_start_time(::getpid())));
  pid_t pid = ::fork();
  if (pid == 0) ::_exit(0);
  ASSERT_GT(pid, 0);
  int status;
  ::waitpid(pid, &status, 0);
  EXPECT_FALSE(crx::state::process_alive(pid, 0));
}

}  // namespace
