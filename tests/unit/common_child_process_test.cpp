#include <fcntl.h>
#include <gtest/gtest.h>
#include <sched.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <string>
#include <thread>
#include <vector>

#include "common/child_process.hpp"
#include "common/error.hpp"
#include "common/unique_fd.hpp"

namespace {

using crx::ChildProcess;
using crx::SpawnOptions;
using crx::spawn;

// Is pid a process at all (a zombie counts)?
bool exists(pid_t pid) { return ::kill(pid, 0) == 0; }

// What a child wrote to stdout (read until it closes), and its wait status.
std::string output_of(const std::vector<std::string>& argv, SpawnOptions o, int* status) {
  int p[2];
  if (::pipe2(p, O_CLOEXEC) != 0) return "pipe failed";
  crx::UniqueFd r(p[0]), w(p[1]);
  o.stdout_fd = w.get();
  ChildProcess child = spawn(argv, o);
  w.reset();
  std::string out;
  char buf[256];
  ssize_t n;
  while ((n = ::read(r.get(), buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  *status = child.wait();
  return out;
}

// The Error spawn throws ("no error" when it returns a child).
crx::Error spawn_error(const std::vector<std::string>& argv, const SpawnOptions& o = {}) {
  try {
    spawn(argv, o);
  } catch (const crx::Error& e) {
    return e;
  }
  return crx::Error("no error");
}

TEST(ChildProcess, AFailedExecIsAnErrorWithItsErrno) {
  crx::Error e = spawn_error({"/nonexistent/program"});
  EXPECT_STREQ(e.what(), "exec /nonexistent/program: No such file or directory");
  EXPECT_EQ(e.sys_errno(), ENOENT);
  EXPECT_EQ(e.cause(), crx::Cause::NotFound);
}

TEST(ChildProcess, AFailedExecSaysWhatTheCallerNamedIt) {
  SpawnOptions o;
  o.path = "/dev/null";  // not executable
  o.exec_error = "hook prestart /dev/null: execve";
  crx::Error e = spawn_error({"hook"}, o);
  EXPECT_STREQ(e.what(), "hook prestart /dev/null: execve: Permission denied");
  EXPECT_EQ(e.sys_errno(), EACCES);
}

TEST(ChildProcess, WaitGivesTheStatusOnce) {
  ChildProcess child = spawn({"sh", "-c", "exit 3"});
  EXPECT_TRUE(child.running());
  int status = child.wait();
  EXPECT_EQ(crx::describe_wait_status(status), "exited with status 3");
  EXPECT_FALSE(child.running());
  EXPECT_EQ(child.pid(), -1);
  EXPECT_THROW(child.wait(), crx::Error);
}

TEST(ChildProcess, IsKilledAndReapedWhenDropped) {
  pid_t pid;
  {
    ChildProcess child = spawn({"sleep", "100"});
    pid = child.pid();
    ASSERT_GT(pid, 0);
    ASSERT_TRUE(exists(pid));
  }
  EXPECT_FALSE(exists(pid)) << "killed and reaped: not even a zombie is left";
}

TEST(ChildProcess, AReleasedChildLivesOn) {
  pid_t pid;
  {
    ChildProcess child = spawn({"sleep", "100"});
    pid = child.release();
    EXPECT_FALSE(child.running());
    EXPECT_EQ(child.release(), -1);
  }
  ASSERT_GT(pid, 0);
  int status = 0;
  EXPECT_EQ(::waitpid(pid, &status, WNOHANG), 0) << "still running after its owner is gone";
  ::kill(pid, SIGKILL);
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  EXPECT_EQ(crx::describe_wait_status(status), "killed by signal 9 (Killed)");
}

TEST(ChildProcess, AdoptsAChildForkedByHand) {
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    ::pause();
    ::_exit(0);
  }
  { ChildProcess child(pid); }
  EXPECT_FALSE(exists(pid));
}

TEST(ChildProcess, TheChildsSideOfAForkOwnsNothing) {
  // A ChildProcess(0) must never kill(0, ...): that is our process group.
  ChildProcess none(0);
  EXPECT_FALSE(none.running());
  EXPECT_EQ(none.pid(), -1);
  int status = 0;
  EXPECT_TRUE(none.try_wait(&status));
}

TEST(ChildProcess, MovingIntoAnOwnerKillsWhatItHeld) {
  ChildProcess first = spawn({"sleep", "100"});
  pid_t first_pid = first.pid();
  ChildProcess second = spawn({"sleep", "100"});
  pid_t second_pid = second.pid();
  first = std::move(second);
  EXPECT_FALSE(exists(first_pid));
  EXPECT_EQ(first.pid(), second_pid);
  EXPECT_FALSE(second.running());
}

TEST(ChildProcess, TryWaitSeesTheExit) {
  ChildProcess child = spawn({"sleep", "100"});
  int status = 0;
  EXPECT_FALSE(child.try_wait(&status));
  ::kill(child.pid(), SIGTERM);
  // Blocks until the exit: try_wait then finds it at once.
  siginfo_t si{};
  ASSERT_EQ(::waitid(P_PID, child.pid(), &si, WEXITED | WNOWAIT), 0);
  EXPECT_TRUE(child.try_wait(&status));
  EXPECT_TRUE(WIFSIGNALED(status));
  EXPECT_FALSE(child.running());
}

TEST(ChildProcess, WaitForReturnsAtTheExitOrTheTimeout) {
  ChildProcess child = spawn({"sleep", "100"});
  int status = 0;
  EXPECT_FALSE(child.wait_for(std::chrono::milliseconds(20), &status));
  EXPECT_TRUE(child.running());
  ::kill(child.pid(), SIGTERM);
  EXPECT_TRUE(child.wait_for(std::chrono::seconds(10), &status));
  EXPECT_TRUE(WIFSIGNALED(status));
  EXPECT_FALSE(child.running());
  EXPECT_TRUE(child.wait_for(std::chrono::milliseconds(0), &status));  // nothing left to wait for
}

TEST(ChildProcess, KeepsOnlyTheFdsAskedFor) {
  int keep[2], drop[2];
  ASSERT_EQ(::pipe2(keep, O_CLOEXEC), 0);
  ASSERT_EQ(::pipe2(drop, O_CLOEXEC), 0);
  std::string script = "test -e /proc/self/fd/" + std::to_string(keep[1]) +
                       " && ! test -e /proc/self/fd/" + std::to_string(drop[1]);
  SpawnOptions o;
  o.keep_fds = {keep[1]};
  ChildProcess child = spawn({"sh", "-c", script}, o);
  EXPECT_EQ(crx::describe_wait_status(child.wait()), "exited with status 0");
  for (int fd : {keep[0], keep[1], drop[0], drop[1]}) ::close(fd);
}

TEST(ChildProcess, RunsPathWithArgvAndTheWholeEnvironmentGiven) {
  SpawnOptions o;
  o.path = "/bin/sh";
  std::vector<std::string> env = {"ONLY=this"};
  o.env = &env;
  int status = 0;
  std::string out = output_of({"named", "-c", "echo \"$0 $ONLY ${HOME:-nohome}\""}, o, &status);
  EXPECT_EQ(out, "named this nohome\n");
  EXPECT_EQ(crx::describe_wait_status(status), "exited with status 0");
}

TEST(ChildProcess, StartsWithNoSignalBlockedWhenAsked) {
  sigset_t usr1, old;
  sigemptyset(&usr1);
  sigaddset(&usr1, SIGUSR1);
  ASSERT_EQ(::sigprocmask(SIG_BLOCK, &usr1, &old), 0);
  // grep itself, not through sh: dash clears the mask it inherits.
  const std::vector<std::string> argv = {"grep", "SigBlk", "/proc/self/status"};
  int status = 0;
  std::string inherited = output_of(argv, SpawnOptions{}, &status);
  SpawnOptions o;
  o.unblock_signals = true;
  std::string unblocked = output_of(argv, o, &status);
  ::sigprocmask(SIG_SETMASK, &old, nullptr);
  // SIGUSR1 is signal 10: bit 9 of the mask.
  EXPECT_NE(inherited.find("0000000000000200"), std::string::npos) << inherited;
  EXPECT_EQ(unblocked, "SigBlk:\t0000000000000000\n");
}

TEST(ChildProcess, JoinsTheNamespacesGivenBeforeExec) {
  if (::geteuid() != 0) GTEST_SKIP() << "setns needs CAP_SYS_ADMIN";
  // New namespaces of two types, made by a thread of its own and held by fds.
  crx::UniqueFd netns, uts;
  std::thread([&] {
    if (::unshare(CLONE_NEWNET | CLONE_NEWUTS) != 0) return;
    netns.reset(::open("/proc/thread-self/ns/net", O_RDONLY | O_CLOEXEC));
    uts.reset(::open("/proc/thread-self/ns/uts", O_RDONLY | O_CLOEXEC));
  }).join();
  ASSERT_TRUE(netns);
  ASSERT_TRUE(uts);
  auto inode = [](int fd) {
    struct stat st{};
    EXPECT_EQ(::fstat(fd, &st), 0);
    return std::to_string(st.st_ino);
  };
  auto our_inode = [](const char* path) {
    struct stat st{};
    EXPECT_EQ(::stat(path, &st), 0);
    return std::to_string(st.st_ino);
  };
  ASSERT_NE(inode(netns.get()), our_inode("/proc/self/ns/net"));
  ASSERT_NE(inode(uts.get()), our_inode("/proc/self/ns/uts"));
  const std::vector<std::string> argv = {"stat", "-L", "-c", "%i", "/proc/self/ns/net",
                                         "/proc/self/ns/uts"};
  SpawnOptions o;
  o.namespace_fds = {netns.get(), uts.get()};
  int status = 0;
  std::string out = output_of(argv, o, &status);
  EXPECT_EQ(out, inode(netns.get()) + "\n" + inode(uts.get()) + "\n");
  // Without them the child stays in ours.
  out = output_of(argv, SpawnOptions{}, &status);
  EXPECT_EQ(out, our_inode("/proc/self/ns/net") + "\n" + our_inode("/proc/self/ns/uts") + "\n");
}

TEST(ChildProcess, ANamespaceItCannotJoinIsAnErrorWithItsErrno) {
  crx::UniqueFd not_a_namespace(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  ASSERT_TRUE(not_a_namespace);
  SpawnOptions o;
  o.namespace_fds = {not_a_namespace.get()};
  crx::Error e = spawn_error({"true"}, o);
  EXPECT_STREQ(e.what(), "joining a namespace for true: Invalid argument");
  EXPECT_EQ(e.sys_errno(), EINVAL);
}

TEST(ChildProcess, QuietPutsStdioOnDevNull) {
  SpawnOptions o;
  o.quiet = true;
  int status = 0;
  // stdout_fd (the pipe) comes after quiet: only stderr is on /dev/null.
  std::string out = output_of({"sh", "-c", "readlink /proc/self/fd/2"}, o, &status);
  EXPECT_EQ(out, "/dev/null\n");
}

}  // namespace
