// crx exec through the crx binary: namespaces, cgroup, exit status, user,
// env/cwd, --process, --detach with --pid-file, tty via --console-socket,
// and the error messages containerd's shim matches.
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <sstream>

#include "harness.hpp"

namespace crx::test {
namespace {

using nlohmann::json;

std::string link_of(const std::string& path) {
  std::error_code ec;
  return std::filesystem::read_symlink(path, ec).string();
}

TEST(Exec, JoinsEveryNamespaceOfTheContainer) {
  CRX_REQUIRE_ROOT();
  Running c;
  int pid = init_pid(c.id);
  // the exec'd shell reports its own namespaces; they must be the init's
  auto r = run_crx({"exec", c.id, "sh", "-c",
                    "for n in mnt uts ipc net pid cgroup; do readlink /proc/self/ns/$n; done"});
  ASSERT_EQ(r.status, 0) << r.err;
  std::istringstream in(r.out);
  for (const char* n : {"mnt", "uts", "ipc", "net", "pid", "cgroup"}) {
    std::string line;
    std::getline(in, line);
    std::string init_ns = link_of("/proc/" + std::to_string(pid) + "/ns/" + n);
    if (std::string(n) == "pid") init_ns = link_of("/proc/" + std::to_string(pid) + "/ns/pid_for_children");
    EXPECT_EQ(line, init_ns) << n;
    EXPECT_NE(line, link_of(std::string("/proc/self/ns/") + n)) << n << " is the host's";
  }
}

TEST(Exec, SeesTheContainerPidNamespace) {
  CRX_REQUIRE_ROOT();
  Running c;
  auto r = run_crx({"exec", c.id, "sh", "-c", "echo $$; ps"});
  ASSERT_EQ(r.status, 0) << r.err;
  std::istringstream in(r.out);
  int own = 0;
  in >> own;
  EXPECT_GT(own, 1) << r.out;
  EXPECT_LT(own, 100) << "a small pid of the container's namespace, not a host pid: " << r.out;
  EXPECT_NE(r.out.find("sleep 1000"), std::string::npos) << "the init is visible: " << r.out;
}

TEST(Exec, RunsInTheContainerCgroup) {
  CRX_REQUIRE_ROOT();
  Running c;
  int pid = init_pid(c.id);
  std::string init_cgroups = read_text("/proc/" + std::to_string(pid) + "/cgroup");
  auto dir = temp_dir("exec-cg");
  std::string pid_file = dir + "/exec.pid";
  auto r = run_crx_detached({"exec", "--detach", "--pid-file", pid_file, c.id, "sleep", "1000"});
  ASSERT_EQ(r.status, 0) << r.err;
  int exec_pid = std::stoi(read_text(pid_file));
  EXPECT_NE(exec_pid, pid);
  EXPECT_EQ(read_text("/proc/" + std::to_string(exec_pid) + "/cgroup"), init_cgroups);
  auto ps = run_crx({"ps", "--format", "json", c.id});
  ASSERT_EQ(ps.status, 0) << ps.err;
  auto pids = json::parse(ps.out);
  EXPECT_NE(std::find(pids.begin(), pids.end(), exec_pid), pids.end()) << ps.out;
  std::filesystem::remove_all(dir);
}

TEST(Exec, ExitStatusAndOutputComeBack) {
  CRX_REQUIRE_ROOT();
  Running c;
  auto r = run_crx({"exec", c.id, "sh", "-c", "echo out; echo err >&2; exit 7"});
  EXPECT_EQ(r.status, 7);
  EXPECT_EQ(r.out, "out\n");
  EXPECT_EQ(r.err, "err\n");
  EXPECT_EQ(run_crx({"exec", c.id, "sh", "-c", "kill -9 $$"}).status, 128 + 9);
}

TEST(Exec, EnvCwdUserAndCapsFlags) {
  CRX_REQUIRE_ROOT();
  // the shared rootfs is a mkdtemp dir (0700): let uid 1234 reach /bin/sh
  std::filesystem::permissions(busybox_rootfs(), std::filesystem::perms(0755));
  Running c;
  auto r = run_crx({"exec", "-e", "FOO=bar", "--env", "BAZ=qux", "--cwd", "/etc", "-u", "1234:5678",
                    "--no-new-privs", c.id, "sh", "-c",
                    "echo $FOO $BAZ; pwd; id -u; id -g; grep NoNewPrivs /proc/self/status"});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "bar qux\n/etc\n1234\n5678\nNoNewPrivs:\t1\n");
  auto caps = run_crx({"exec", "--cap", "CAP_SYS_TIME", c.id, "grep", "CapEff", "/proc/self/status"});
  ASSERT_EQ(caps.status, 0) << caps.err;
  auto plain = run_crx({"exec", c.id, "grep", "CapEff", "/proc/self/status"});
  EXPECT_NE(caps.out, plain.out) << "CAP_SYS_TIME (25) was added: " << caps.out;
}

TEST(Exec, ProcessFileAsContainerdSendsIt) {
  CRX_REQUIRE_ROOT();
  Running c;
  auto dir = temp_dir("exec-process");
  json p = {{"terminal", false},
            {"user", {{"uid", 0}, {"gid", 0}}},
            {"args", {"sh", "-c", "echo from-process-json $X; exit 3"}},
            {"env", {"PATH=/bin:/usr/bin", "X=1"}},
            {"cwd", "/"},
            {"rlimits", {{{"type", "RLIMIT_NOFILE"}, {"soft", 123}, {"hard", 456}}}}};
  write_text(dir + "/process.json", p.dump());
  auto r = run_crx({"exec", "--process", dir + "/process.json", c.id});
  EXPECT_EQ(r.status, 3) << r.err;
  EXPECT_EQ(r.out, "from-process-json 1\n");
  p["args"] = {"sh", "-c", "ulimit -n"};
  write_text(dir + "/process.json", p.dump());
  r = run_crx({"exec", "--process", dir + "/process.json", c.id});
  EXPECT_EQ(r.out, "123\n") << r.err;
  std::filesystem::remove_all(dir);
}

TEST(Exec, SeccompOfTheContainerApplies) {
  CRX_REQUIRE_ROOT();
  Running c({"sleep", "1000"}, [](json& cfg) {
    cfg["linux"]["seccomp"] = {{"defaultAction", "SCMP_ACT_ALLOW"},
                               {"syscalls", {{{"names", {"mkdir", "mkdirat"}}, {"action", "SCMP_ACT_ERRNO"}}}}};
  });
  auto r = run_crx({"exec", c.id, "sh", "-c", "mkdir /tmp/x && echo made || echo refused"});
  EXPECT_EQ(r.out, "refused\n") << r.err;
}

TEST(Exec, TtyThroughTheConsoleSocket) {
  CRX_REQUIRE_ROOT();
  Running c;
  auto dir = temp_dir("exec-console");
  std::string sock_path = dir + "/console.sock";
  ConsoleSocket console(sock_path);
  auto r = run_crx({"exec", "--tty", "--detach", "--console-socket", sock_path, c.id, "sh", "-c",
                    "tty; echo on-the-pty"});
  ASSERT_EQ(r.status, 0) << r.err;
  int master = console.receive_master(nullptr);
  ASSERT_GE(master, 0);
  std::string seen = read_all(master);
  EXPECT_NE(seen.find("on-the-pty"), std::string::npos) << seen;
  EXPECT_NE(seen.find("/dev/pts/"), std::string::npos) << seen;
  ::close(master);
  std::filesystem::remove_all(dir);
}

TEST(Exec, ErrorsCarryTheShimSubstrings) {
  CRX_REQUIRE_ROOT();
  auto missing = run_crx({"exec", "no-such-container-xyz", "true"});
  EXPECT_NE(missing.status, 0);
  EXPECT_NE(missing.err.find("does not exist"), std::string::npos) << missing.err;

  Bundle b({"true"});
  auto id = unique_id();
  ASSERT_EQ(run_crx({"run", "--keep", "--bundle", b.dir(), id}).status, 0);
  auto stopped = run_crx({"exec", id, "true"});
  EXPECT_NE(stopped.status, 0);
  EXPECT_NE(stopped.err.find("container not running"), std::string::npos) << stopped.err;
  force_delete(id);

  Running c;
  auto bad = run_crx({"exec", c.id, "no-such-binary"});
  EXPECT_NE(bad.status, 0);
  EXPECT_NE(bad.err.find("executable file not found"), std::string::npos) << bad.err;
  auto tty = run_crx({"exec", "--tty", "--detach", c.id, "true"});
  EXPECT_NE(tty.status, 0);
  EXPECT_NE(tty.err.find("console socket"), std::string::npos) << tty.err;
}

}  // namespace
}  // namespace crx::test
