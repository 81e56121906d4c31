// One test per Linux feature of runtime-spec 1.x that crx implements; each
// fails without the feature (the container prints what it sees).
#include <fcntl.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <cstring>
#include <filesystem>

#include "harness.hpp"

namespace crx::test {
namespace {

using nlohmann::json;

// Runs the bundle in the foreground and returns stdout; expects exit 0.
std::string output_of(Bundle& b) {
  b.write();
  auto id = unique_id();
  auto r = run_crx({"run", "--bundle", b.dir(), id});
  EXPECT_EQ(r.status, 0) << r.err;
  expect_nothing_left(id);
  return r.out;
}

TEST(Namespaces, PidAndUtsAreNew) {
  CRX_REQUIRE_ROOT();
  Bundle b({"sh", "-c", "echo $$; hostname"});
  b.config()["hostname"] = "crx-test-host";
  EXPECT_EQ(output_of(b), "1\ncrx-test-host\n");
}

TEST(Namespaces, UserNamespaceWithMappings) {
  CRX_REQUIRE_ROOT();
  Bundle b({"sh", "-c", "cat /proc/self/uid_map; cat /proc/self/gid_map; id -u"});
  b.config()["linux"]["namespaces"].push_back({{"type", "user"}});
  b.config()["linux"]["uidMappings"] = json::array({{{"containerID", 0}, {"hostID", 100000}, {"size", 65536}}});
  b.config()["linux"]["gidMappings"] = json::array({{{"containerID", 0}, {"hostID", 100000}, {"size", 65536}}});
  // the shared rootfs is owned by host root: keep it readable (it is world-readable)
  auto out = output_of(b);
  EXPECT_NE(out.find("100000"), std::string::npos) << out;
  EXPECT_NE(out.find("65536"), std::string::npos) << out;
  EXPECT_EQ(out.substr(out.rfind('\n', out.size() - 2) + 1), "0\n") << out;
}

TEST(Namespaces, CgroupAndTimeNamespaces) {
  CRX_REQUIRE_ROOT();
  Bundle b({"sh", "-c", "cat /proc/self/timens_offsets; grep -c ':/$' /proc/self/cgroup"});
  // the default spec already has a cgroup namespace
  b.config()["linux"]["namespaces"].push_back({{"type", "time"}});
  b.config()["linux"]["timeOffsets"] = {{"monotonic", {{"secs", 1000}, {"nanosecs", 0}}}};
  auto out = output_of(b);
  EXPECT_NE(out.find("monotonic") , std::string::npos) << out;
  EXPECT_NE(out.find("1000"), std::string::npos) << out;
}

TEST(Namespaces, JoinsANamespaceByPath) {
  CRX_REQUIRE_ROOT();
  Bundle holder({"sleep", "1000"});
  auto holder_id = unique_id("holder");
  ASSERT_EQ(run_crx({"run", "-d", "--bundle", holder.dir(), holder_id}).status, 0);
  auto st = json::parse(run_crx({"state", holder_id}).out);
  std::string ns_path = "/proc/" + std::to_string(st["pid"].get<int>()) + "/ns/uts";
  // give the holder a distinctive hostname via its uts namespace
  ASSERT_EQ(run_sh("nsenter --uts=" + ns_path + " hostname joined-uts").status, 0);
  Bundle b({"hostname"});
  for (auto& ns : b.config()["linux"]["namespaces"])
    if (ns["type"] == "uts") ns["path"] = ns_path;
  b.config().erase("hostname");
  EXPECT_EQ(output_of(b), "joined-uts\n");
  force_delete(holder_id);
}

TEST(Rootfs, ReadonlyRootAndNoPivot) {
  CRX_REQUIRE_ROOT();
  Bundle b({"sh", "-c", "touch /x 2>/dev/null && echo writable || echo readonly"});
  EXPECT_EQ(output_of(b), "readonly\n");
  b.write();
  auto id = unique_id();
  auto r = run_crx({"run", "--no-pivot", "--bundle", b.dir(), id});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "readonly\n");
}

TEST(Mounts, BindTmpfsWithOptionsAndPropagation) {
  CRX_REQUIRE_ROOT();
  TempDir tmp("crx-bind");
  const std::string& host_dir = tmp.path();
  write_text(host_dir + "/file", "from-host\n");
  Bundle b({"sh", "-c",
            "cat /mnt/bind/file; grep ' /mnt/tmp ' /proc/self/mountinfo | grep -o 'size=[0-9]*k'; "
            "touch /mnt/robind/x 2>/dev/null || echo ro-ok"});
  auto& m = b.config()["mounts"];
  m.push_back({{"destination", "/mnt/bind"}, {"type", "bind"}, {"source", host_dir}, {"options", {"rbind", "rprivate"}}});
  m.push_back({{"destination", "/mnt/tmp"}, {"type", "tmpfs"}, {"source", "tmpfs"}, {"options", {"size=64k", "nosuid"}}});
  m.push_back({{"destination", "/mnt/robind"}, {"type", "bind"}, {"source", host_dir}, {"options", {"bind", "ro"}}});
  b.config()["root"]["readonly"] = false;
  // mount targets under a read-only shared rootfs: use a private copy of /mnt via tmpfs
  m.insert(m.begin() + 1, json{{"destination", "/mnt"}, {"type", "tmpfs"}, {"source", "tmpfs"}, {"options", {"mode=755"}}});
  EXPECT_EQ(output_of(b), "from-host\nsize=64k\nro-ok\n");
}

TEST(Mounts, MaskedAndReadonlyPaths) {
  CRX_REQUIRE_ROOT();
  Bundle b({"sh", "-c", "wc -c < /proc/version; ls /proc/driver | wc -l; echo 1 > /proc/sys/kernel/ns_last_pid 2>/dev/null || echo ro"});
  b.config()["linux"]["maskedPaths"] = {"/proc/version", "/proc/driver"};
  b.config()["linux"]["readonlyPaths"] = {"/proc/sys"};
  auto out = output_of(b);
  EXPECT_EQ(out, "0\n0\nro\n");
}

TEST(Devices, DefaultAndListedDevices) {
  CRX_REQUIRE_ROOT();
  Bundle b({"sh", "-c", "ls -l /dev/null /dev/zero /dev/full /dev/random /dev/urandom /dev/tty /dev/mydev | wc -l; "
                        "stat -c '%t,%T' /dev/mydev; echo x > /dev/null && echo null-ok; readlink /dev/fd"});
  b.config()["linux"]["devices"] = json::array({{{"path", "/dev/mydev"}, {"type", "c"}, {"major", 1}, {"minor", 8}, {"fileMode", 0666}}});
  EXPECT_EQ(output_of(b), "7\n1,8\nnull-ok\n/proc/self/fd\n");
}

TEST(Process, UserGroupsUmaskCwdEnv) {
  CRX_REQUIRE_ROOT();
  Bundle b({"sh", "-c", "id -u; id -g; id -G; umask; pwd; echo $CRX_TEST"});
  b.config()["process"]["user"] = {{"uid", 1000}, {"gid", 1001}, {"additionalGids", {2000, 2001}}, {"umask", 63}};
  b.config()["process"]["cwd"] = "/tmp";
  b.config()["process"]["env"].push_back("CRX_TEST=hello-env");
  EXPECT_EQ(output_of(b), "1000\n1001\n1001 2000 2001\n0077\n/tmp\nhello-env\n");
}

TEST(Process, HostnameDomainnameSysctlRlimits) {
  CRX_REQUIRE_ROOT();
  Bundle b({"sh", "-c", "hostname; cat /proc/sys/kernel/domainname; cat /proc/sys/kernel/shmmni; ulimit -n; ulimit -Hn"});
  b.config()["hostname"] = "h1";
  b.config()["domainname"] = "d1";
  b.config()["linux"]["sysctl"] = {{"kernel.shmmni", "1234"}};
  b.config()["process"]["rlimits"] = json::array({{{"type", "RLIMIT_NOFILE"}, {"soft", 77}, {"hard", 88}}});
  EXPECT_EQ(output_of(b), "h1\nd1\n1234\n77\n88\n");
}

TEST(Process, CapabilitiesAllFiveSets) {
  CRX_REQUIRE_ROOT();
  Bundle b({"sh", "-c", "grep -E '^Cap(Inh|Prm|Eff|Bnd|Amb)' /proc/self/status"});
  json caps = {"CAP_KILL", "CAP_NET_BIND_SERVICE"};
  b.config()["process"]["capabilities"] = {
      {"bounding", caps}, {"effective", caps}, {"permitted", caps}, {"inheritable", caps}, {"ambient", caps}};
  // CAP_KILL = 5, CAP_NET_BIND_SERVICE = 10 -> 0x420
  auto out = output_of(b);
  EXPECT_EQ(out, "CapInh:\t0000000000000420\nCapPrm:\t0000000000000420\nCapEff:\t0000000000000420\n"
                 "CapBnd:\t0000000000000420\nCapAmb:\t0000000000000420\n");
}

TEST(Process, NoNewPrivilegesAndSeccomp) {
  CRX_REQUIRE_ROOT();
  Bundle b({"sh", "-c", "grep NoNewPrivs /proc/self/status; mkdir /tmp/x 2>&1 || echo mkdir-denied"});
  b.config()["process"]["noNewPrivileges"] = true;
  b.config()["mounts"].push_back({{"destination", "/tmp"}, {"type", "tmpfs"}, {"source", "tmpfs"}, {"options", {"nosuid"}}});
  b.config()["linux"]["seccomp"] = {
      {"defaultAction", "SCMP_ACT_ALLOW"},
      {"architectures", {"SCMP_ARCH_X86_64"}},
      {"syscalls", json::array({{{"names", {"mkdir", "mkdirat"}}, {"action", "SCMP_ACT_ERRNO"}, {"errnoRet", 1}}})}};
  auto out = output_of(b);
  EXPECT_NE(out.find("NoNewPrivs:\t1"), std::string::npos) << out;
  EXPECT_NE(out.find("mkdir-denied"), std::string::npos) << out;
  EXPECT_NE(out.find("Operation not permitted"), std::string::npos) << out;
}

TEST(Hooks, AllSixKindsRunWithStateOnStdin) {
  CRX_REQUIRE_ROOT();
  TempDir tmp("crx-hooks");
  const std::string& dir = tmp.path();
  Bundle b({"true"});
  auto hook = [&](const std::string& out_path) {
    return json{{"path", "/bin/sh"}, {"args", {"sh", "-c", "cat > " + out_path}}};
  };
  // startContainer runs after pivot_root: it sees the bundle's rootfs, so it
  // writes through a bind mount of the host dir at /hookout.
  b.config()["mounts"].push_back({{"destination", "/hookout"}, {"type", "bind"}, {"source", dir}, {"options", {"rbind"}}});
  b.config()["hooks"] = {{"prestart", {hook(dir + "/prestart")}},
                         {"createRuntime", {hook(dir + "/createRuntime")}},
                         {"createContainer", {hook(dir + "/createContainer")}},
                         {"startContainer", {hook("/hookout/startContainer")}},
                         {"poststart", {hook(dir + "/poststart")}},
                         {"poststop", {hook(dir + "/poststop")}}};
  b.write();
  auto id = unique_id();
  auto r = run_crx({"run", "--bundle", b.dir(), id});
  EXPECT_EQ(r.status, 0) << r.err;
  for (std::string phase : {"prestart", "createRuntime", "createContainer", "startContainer", "poststart", "poststop"}) {
    auto text = read_text(dir + "/" + phase);
    ASSERT_FALSE(text.empty()) << phase << " hook did not run";
    auto state = json::parse(text);
    EXPECT_EQ(state["id"], id) << phase;
    EXPECT_TRUE(state.contains("pid") && state.contains("bundle")) << phase;
  }
}

TEST(Hooks, FailingCreateRuntimeHookAbortsAndLeavesNothing) {
  CRX_REQUIRE_ROOT();
  Bundle b({"true"});
  b.config()["hooks"] = {{"createRuntime", {{{"path", "/bin/sh"}, {"args", {"sh", "-c", "echo boom >&2; exit 4"}}}}}};
  b.write();
  auto id = unique_id();
  auto r = run_crx({"run", "--bundle", b.dir(), id});
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.err.find("createRuntime"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("boom"), std::string::npos) << r.err;
  expect_nothing_left(id);
}

TEST(Hooks, TimeoutKillsTheHook) {
  CRX_REQUIRE_ROOT();
  Bundle b({"true"});
  b.config()["hooks"] = {{"prestart", {{{"path", "/bin/sleep"}, {"args", {"sleep", "100"}}, {"timeout", 1}}}}};
  b.write();
  auto id = unique_id();
  auto r = run_crx({"run", "--bundle", b.dir(), id});
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.err.find("timed out"), std::string::npos) << r.err;
  expect_nothing_left(id);
}

TEST(Console, PtyMasterArrivesOnTheConsoleSocket) {
  CRX_REQUIRE_ROOT();
  TempDir tmp("crx-console");
  const std::string& dir = tmp.path();
  std::string sock_path = dir + "/console.sock";
  ConsoleSocket console(sock_path);
  Bundle b({"sh", "-c", "tty; echo on-the-pty"});
  b.config()["process"]["terminal"] = true;
  b.write();
  auto id = unique_id();
  auto r = run_crx({"create", "--bundle", b.dir(), "--console-socket", sock_path, id});
  ASSERT_EQ(r.status, 0) << r.err;
  std::string name;
  int master = console.receive_master(&name);
  ASSERT_GE(master, 0);
  EXPECT_EQ(std::string(name).rfind("/dev/pts/", 0), 0u) << name;
  ASSERT_EQ(run_crx({"start", id}).status, 0);
  std::string seen = read_all(master);
  EXPECT_NE(seen.find("on-the-pty"), std::string::npos) << seen;
  EXPECT_NE(seen.find("/dev/pts/"), std::string::npos) << seen;
  ::close(master);
  force_delete(id);
}

TEST(Fds, PreserveFdsPassesExtraFdsWithListenFds) {
  CRX_REQUIRE_ROOT();
  TempDir tmp("crx-fds");
  const std::string& dir = tmp.path();
  write_text(dir + "/data", "passed-through");
  Bundle b({"sh", "-c", "cat <&3"});
  b.write();
  int fd = ::open((dir + "/data").c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  if (fd != 3) {
    ASSERT_EQ(::dup2(fd, 3), 3);
    ::close(fd);
  }
  auto id = unique_id();
  auto r = run_crx({"run", "--preserve-fds", "1", "--bundle", b.dir(), id}, "", {3});
  ::close(3);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "passed-through");
}

}  // namespace
}  // namespace crx::test
