// Which processes of a container a dump of its init's tree would leave
// behind (checkpoint/outside_processes.hpp), on a fake process table.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <map>

#include "checkpoint/outside_processes.hpp"

namespace {

using crx::checkpoint::OutsideProcess;
using crx::checkpoint::ProcessInfo;
using crx::checkpoint::ProcessTable;
using crx::checkpoint::processes_outside_tree;

// Host pids: 1 the host's init, 700 a shell on the host, 800 `crx exec`
// (alive or gone), 1000 the container's init.
struct FakeTable : ProcessTable {
  std::map<pid_t, ProcessInfo> procs{
      {1, {0, 'S', "/sbin/init"}},
      {700, {1, 'S', "bash"}},
      {1000, {700, 'S', "sh -c counter"}},
  };
  std::vector<pid_t> cgroup, pidns;
  mutable int walks = 0;  // of the pid namespace (a walk of all of /proc)

  void add(pid_t pid, pid_t ppid, const std::string& cmd, bool in_cgroup = true,
           bool in_pidns = true, char state = 'S') {
    procs[pid] = {ppid, state, cmd};
    if (in_cgroup) cgroup.push_back(pid);
    if (in_pidns) pidns.push_back(pid);
  }
  std::vector<pid_t> cgroup_pids() const override { return cgroup; }
  std::vector<pid_t> pid_namespace_pids() const override {
    ++walks;
    return pidns;
  }
  std::optional<ProcessInfo> info(pid_t pid) const override {
    auto it = procs.find(pid);
    if (it == procs.end()) return std::nullopt;
    return it->second;
  }
};

std::vector<pid_t> pids(const std::vector<OutsideProcess>& v) {
  std::vector<pid_t> out;
  for (const auto& p : v) out.push_back(p.pid);
  return out;
}

FakeTable container_with_init() {
  FakeTable t;
  t.cgroup = {1000};
  t.pidns = {1000};
  return t;
}

TEST(OutsideProcesses, InitAndItsDescendantsAreInside) {
  FakeTable t = container_with_init();
  t.add(1001, 1000, "sleep 1");
  t.add(1002, 1001, "cat");          // grandchild
  t.add(1003, 1000, "", true, true, 'Z');  // a zombie child of init
  t.add(1100, 1, "exec'd");
  EXPECT_EQ(pids(processes_outside_tree(t, 1000)), (std::vector<pid_t>{1100}));
  // What a dump carries, for the migration's inventory: no zombie.
  EXPECT_EQ(pids(crx::checkpoint::processes_in_tree(t, 1000)),
            (std::vector<pid_t>{1000, 1001, 1002}));
}

// The freeze checks both sides (outside: refused; in the tree: their unix
// sockets) from one walk of /proc.
TEST(OutsideProcesses, OneWalkGivesBothSides) {
  FakeTable t = container_with_init();
  t.add(1001, 1000, "sleep 1");
  t.add(1100, 1, "exec'd");
  t.add(1101, 1100, "", true, true, 'Z');
  auto split = crx::checkpoint::split_processes(t, 1000);
  EXPECT_EQ(t.walks, 1);
  EXPECT_EQ(pids(split.in_tree), (std::vector<pid_t>{1000, 1001}));
  EXPECT_EQ(split.in_tree_pids(), (std::vector<pid_t>{1000, 1001}));
  EXPECT_EQ(pids(split.outside), (std::vector<pid_t>{1100}));
}

TEST(OutsideProcesses, ExecdProcessWhoseParentIsGoneIsOutside) {
  // `crx exec -d`: crx exited, its child was reparented to the host's init.
  FakeTable t = container_with_init();
  t.add(1100, 1, "sh -c while :; do date > /out/x; sleep 0.2; done");
  t.add(1101, 1100, "sleep 0.2");  // its child is outside too
  auto out = processes_outside_tree(t, 1000);
  EXPECT_EQ(pids(out), (std::vector<pid_t>{1100, 1101}));
  EXPECT_EQ(out[0].command, "sh -c while :; do date > /out/x; sleep 0.2; done");
}

TEST(OutsideProcesses, ForegroundExecIsOutsideThroughAHostParent) {
  // `crx exec` in the foreground: the process is crx's child, crx the shell's.
  FakeTable t = container_with_init();
  t.procs[800] = {700, 'S', "crx exec c1 top"};
  t.add(1200, 800, "top");
  EXPECT_EQ(pids(processes_outside_tree(t, 1000)), (std::vector<pid_t>{1200}));
}

TEST(OutsideProcesses, PidNamespaceMemberOutsideTheCgroupCounts) {
  // Moved to another cgroup but still in the container's pid namespace.
  FakeTable t = container_with_init();
  t.add(1300, 1, "escaped", /*in_cgroup=*/false, /*in_pidns=*/true);
  // In the cgroup without a pid namespace of its own (host pid namespace).
  t.add(1301, 700, "joined the cgroup", /*in_cgroup=*/true, /*in_pidns=*/false);
  EXPECT_EQ(pids(processes_outside_tree(t, 1000)), (std::vector<pid_t>{1300, 1301}));
}

TEST(OutsideProcesses, ZombiesAndVanishedProcessesOutsideAreIgnored) {
  FakeTable t = container_with_init();
  t.add(1400, 1, "", true, true, 'Z');
  t.cgroup.push_back(1401);  // listed, but gone before it was read
  EXPECT_TRUE(processes_outside_tree(t, 1000).empty());
}

TEST(OutsideProcesses, AParentLoopEnds) {
  FakeTable t = container_with_init();
  t.add(1500, 1501, "a");
  t.add(1501, 1500, "b");
  EXPECT_EQ(pids(processes_outside_tree(t, 1000)), (std::vector<pid_t>{1500, 1501}));
}

TEST(OutsideProcesses, TheErrorIsOneLineNamingPidsCommandsAndTheFlag) {
  std::vector<OutsideProcess> p{{1100, "sh -c while :; do date > /out/x; sleep 0.2; done"},
                                {1101, "sleep 0.2"}};
  std::string e = crx::checkpoint::outside_processes_error("c1", p);
  EXPECT_EQ(e.find('\n'), std::string::npos);
  EXPECT_NE(e.find("container c1 has 2 processes outside its init's process tree"),
            std::string::npos) << e;
  EXPECT_NE(e.find("1100 (sh -c while :; do date > /out/x; sleep 0.2; done)"), std::string::npos)
      << e;
  EXPECT_NE(e.find("1101 (sleep 0.2)"), std::string::npos) << e;
  EXPECT_NE(e.find("--kill-exec"), std::string::npos) << e;
  // Long command lines are cut.
  std::string d = crx::checkpoint::describe({{7, std::string(200, 'x')}});
  EXPECT_LT(d.size(), 80u);
  EXPECT_NE(d.find("..."), std::string::npos);
}

TEST(OutsideProcesses, SystemTableReadsParentStateAndCommand) {
  // The real /proc: a child of this test, then the same child as a zombie.
  pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    ::execlp("sleep", "sleep", "30", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  crx::state::ContainerState st;
  st.pid = ::getpid();
  crx::checkpoint::SystemProcessTable t(st);
  std::optional<ProcessInfo> i;
  for (int k = 0; k < 200; ++k) {  // until the child has exec'd
    i = t.info(child);
    if (i && i->command == "sleep 30") break;
    ::usleep(10000);
  }
  ASSERT_TRUE(i);
  EXPECT_EQ(i->ppid, ::getpid());
  EXPECT_EQ(i->command, "sleep 30");
  EXPECT_NE(i->state, 'Z');
  EXPECT_TRUE(t.pid_namespace_pids().empty()) << "same pid namespace as the caller";
  ::kill(child, SIGKILL);
  siginfo_t si{};
  ::waitid(P_PID, static_cast<id_t>(child), &si, WEXITED | WNOWAIT);
  EXPECT_EQ(t.info(child)->state, 'Z');
  ::waitpid(child, nullptr, 0);
  EXPECT_FALSE(t.info(child));
}

}  // namespace
