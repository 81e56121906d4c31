// crx tells a container whose stdio is its caller's terminal (which
// Debian's CRIU 3.17.1 cannot dump) by the terminal's devpts instance, not
// by CRIU's log text.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/mount.h>
#include <sys/wait.h>
#include <unistd.h>

#include "capability.hpp"
#include "checkpoint/outside_terminal.hpp"
#include "common/unique_fd.hpp"

namespace {

using crx::checkpoint::stdio_is_outside_terminal;

// A child whose stdin is `stdin_fd`; with `own_devpts` it first mounts a
// devpts instance of its own on /dev/pts in a mount namespace of its own.
// Returns once it is set up; kill and reap it with stop().
pid_t start_child(int stdin_fd, bool own_devpts) {
  int ready[2];
  if (::pipe2(ready, O_CLOEXEC) != 0) return -1;
  pid_t pid = ::fork();
  if (pid == 0) {
    if (own_devpts && (::unshare(CLONE_NEWNS) != 0 ||
                       ::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0 ||
                       ::mount("devpts", "/dev/pts", "devpts", 0, "newinstance,ptmxmode=0666") != 0)) {
      ::_exit(1);
    }
    ::dup2(stdin_fd, 0);
    (void)!::write(ready[1], "x", 1);
    for (;;) ::pause();
  }
  ::close(ready[1]);
  char c;
  bool ok = ::read(ready[0], &c, 1) == 1;
  ::close(ready[0]);
  if (!ok) {
    ::waitpid(pid, nullptr, 0);
    return -1;
  }
  return pid;
}

void stop(pid_t pid) {
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
}

struct Pty {
  crx::UniqueFd master, slave;
};

// A pty of this process's /dev/pts; slave is not open when there is none.
Pty open_pty() {
  Pty p;
  p.master = crx::UniqueFd(::posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC));
  if (!p.master || ::grantpt(p.master.get()) != 0 || ::unlockpt(p.master.get()) != 0) return p;
  p.slave = crx::UniqueFd(::open(::ptsname(p.master.get()), O_RDWR | O_NOCTTY | O_CLOEXEC));
  return p;
}

TEST(OutsideTerminal, APipeIsNoTerminal) {
  int p[2];
  ASSERT_EQ(::pipe2(p, O_CLOEXEC), 0);
  pid_t pid = start_child(p[0], false);
  ASSERT_GT(pid, 0);
  EXPECT_FALSE(stdio_is_outside_terminal(pid));
  stop(pid);
  ::close(p[0]);
  ::close(p[1]);
}

TEST(OutsideTerminal, APtyOfTheProcesssOwnDevptsIsInside) {
  auto pty = open_pty();
  if (!pty.slave) GTEST_SKIP() << "no pty here";
  pid_t pid = start_child(pty.slave.get(), false);
  ASSERT_GT(pid, 0);
  EXPECT_FALSE(stdio_is_outside_terminal(pid));
  stop(pid);
}

TEST(OutsideTerminal, APtyOfAnotherDevptsIsOutside) {
  CRX_SKIP_WITHOUT(CAP_SYS_ADMIN);  // a mount namespace and a devpts of the child's own
  auto pty = open_pty();
  if (!pty.slave) GTEST_SKIP() << "no pty here";
  pid_t pid = start_child(pty.slave.get(), true);
  ASSERT_GT(pid, 0);
  EXPECT_TRUE(stdio_is_outside_terminal(pid));
  stop(pid);
}

}  // namespace
