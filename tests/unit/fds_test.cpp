#include "linux/fds.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>

#include "child_process.hpp"
#include "common/error.hpp"

namespace {

TEST(Fds, ListenFdsCountOnlyWhenListenPidIsOurs) {
  const std::string out = crx::test::in_child([] {
    std::string r;
    ::setenv("LISTEN_FDS", "2", 1);
    ::setenv("LISTEN_PID", std::to_string(::getpid()).c_str(), 1);
    r += std::to_string(crx::linux_::listen_fd_count()) + " ";
    r += std::to_string(crx::linux_::passed_fd_count(3)) + " ";
    ::setenv("LISTEN_PID", std::to_string(::getpid() + 1).c_str(), 1);
    r += std::to_string(crx::linux_::listen_fd_count()) + " ";
    ::setenv("LISTEN_PID", "garbage", 1);
    r += std::to_string(crx::linux_::listen_fd_count());
    return r;
  });
  EXPECT_EQ(out, "2 5 0 0");
}

TEST(Fds, ListenEnvIsAddedAndReplacesOldEntries) {
  std::vector<std::string> env = {"PATH=/bin", "LISTEN_FDS=9", "LISTEN_PID=77"};
  crx::linux_::add_listen_fds_env(env, 2);
  EXPECT_EQ(env, (std::vector<std::string>{"PATH=/bin", "LISTEN_FDS=2", "LISTEN_PID=1"}));
  std::vector<std::string> untouched = {"PATH=/bin", "LISTEN_FDS=9"};
  crx::linux_::add_listen_fds_env(untouched, 0);
  EXPECT_EQ(untouched.size(), 2u);
}

TEST(Fds, PassedFdsMustBeOpen) {
  const std::string out = crx::test::in_child([] {
    ::close_range(3, 99, 0);
    ::dup2(0, 3);
    crx::linux_::check_passed_fds_open(1);
    crx::linux_::check_passed_fds_open(2);
    return std::string("no error");
  });
  EXPECT_NE(out.find("file descriptor 4 is not open"), std::string::npos) << out;
}

TEST(Fds, PreparedFdsSurviveExecAndOthersDoNot) {
  const std::string out = crx::test::in_child([] {
    ::close_range(3, 99, 0);
    for (int fd : {3, 4, 5, 9}) {
      ::dup2(0, fd);
      ::fcntl(fd, F_SETFD, FD_CLOEXEC);
    }
    ::dup2(0, 7);  // inherited without CLOEXEC: must get it
    crx::linux_::prepare_preserved_fds(2);
    std::string r;
    for (int fd : {3, 4, 5, 7, 9})
      r += std::to_string(fd) + ((::fcntl(fd, F_GETFD) & FD_CLOEXEC) ? ":cloexec " : ":kept ");
    return r;
  });
  EXPECT_EQ(out, "3:kept 4:kept 5:cloexec 7:cloexec 9:cloexec ");
}

}  // namespace
