// Configurations runc 1.1 runs (or refuses with its own words) that crx
// refused or ran differently before issue 15; runtime/RUNC_PARITY.md has the
// whole table. Each test runs the real crx as root with real namespaces.
#include <sys/mount.h>
#include <unistd.h>

#include <filesystem>
#include <sstream>

#include "common/fs.hpp"
#include "common/scope_guard.hpp"
#include "harness.hpp"
#include "linux/lsm.hpp"

namespace crx::test {
namespace {

using nlohmann::json;

// Runs the bundle in the foreground; returns the result after checking that
// nothing of the container is left.
Result run_bundle(Bundle& b) {
  b.write();
  auto id = unique_id();
  auto r = run_crx({"run", "--bundle", b.dir(), id});
  expect_nothing_left(id);
  return r;
}

// The optional fields (propagation) of the mount at "/" in mountinfo text.
std::string root_propagation(const std::string& mountinfo) {
  std::istringstream in(mountinfo);
  for (std::string line; std::getline(in, line);) {
    std::istringstream f(line);
    std::string id, parent, dev, root, point, opts;
    f >> id >> parent >> dev >> root >> point >> opts;
    if (point != "/") continue;
    std::string optional, word;
    while (f >> word && word != "-") optional += (optional.empty() ? "" : " ") + word;
    return optional.empty() ? "private" : optional;
  }
  return "";
}

void remove_namespace(json& config, const std::string& type) {
  auto& list = config["linux"]["namespaces"];
  for (auto it = list.begin(); it != list.end();)
    it = (*it)["type"] == type ? list.erase(it) : it + 1;
}

// rootfsPropagation shared/rshared: pivot_root refuses a new root whose
// mount, or the one it sits on, is shared; runc makes the rootfs's mount
// private for it and (runc >= 1.4) applies the propagation to "/" after.
TEST(RuncParity, SharedRootfsPropagationRuns) {
  CRX_REQUIRE_ROOT();
  for (const char* propagation : {"shared", "rshared"}) {
    Bundle b({"cat", "/proc/self/mountinfo"});
    b.config()["linux"]["rootfsPropagation"] = propagation;
    auto r = run_bundle(b);
    ASSERT_EQ(r.status, 0) << propagation << ": " << r.err;
    EXPECT_EQ(root_propagation(r.out).rfind("shared:", 0), 0u)
        << propagation << ": / is " << root_propagation(r.out);
  }
  // the bind of the rootfs stayed in the container's mount namespace
  EXPECT_EQ(read_text("/proc/self/mountinfo").find(busybox_rootfs()), std::string::npos);
}

TEST(RuncParity, UnbindableRootfsPropagationRuns) {
  CRX_REQUIRE_ROOT();
  Bundle b({"cat", "/proc/self/mountinfo"});
  b.config()["linux"]["rootfsPropagation"] = "runbindable";
  auto r = run_bundle(b);
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(root_propagation(r.out), "unbindable");
}

TEST(RuncParity, PrivatePropagationWithoutPivotRootIsRefusedAsRunc) {
  CRX_REQUIRE_ROOT();
  Bundle b({"true"});
  b.config()["linux"]["rootfsPropagation"] = "rprivate";
  b.write();
  auto id = unique_id();
  auto r = run_crx({"run", "--no-pivot", "--bundle", b.dir(), id});
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.err.find("rootfsPropagation of [r]private is not safe without pivot_root"), std::string::npos)
      << r.err;
  expect_nothing_left(id);
}

// No mount namespace: runc chroots into the rootfs in the caller's mount
// namespace. Nothing of the caller's mounts may change.
TEST(RuncParity, NoMountNamespaceChroots) {
  CRX_REQUIRE_ROOT();
  // a private copy: the devices are made in the rootfs's own /dev then
  TempDir tmp("crx-nomnt");
  std::string rootfs = tmp / "rootfs";
  // the container's /proc, if left, goes before tmp's walk could enter it
  ScopeGuard unmount_proc([&] { ::umount2((rootfs + "/proc").c_str(), MNT_DETACH); });
  ASSERT_EQ(run_sh("cp -a " + shell_quoted(busybox_rootfs()) + " " + shell_quoted(rootfs)).status, 0);
  std::string before = root_propagation(read_text("/proc/self/mountinfo"));
  Bundle b({"sh", "-c", "test -x /bin/busybox && test ! -e /etc/os-release && echo chrooted; "
                        "readlink /proc/self/ns/mnt"});
  remove_namespace(b.config(), "mount");
  b.config()["root"]["path"] = rootfs;
  // crx's init (as runc's) needs /proc; it is mounted in our namespace
  b.config()["mounts"] = json::array({{{"destination", "/proc"}, {"type", "proc"}, {"source", "proc"}}});
  b.config()["linux"].erase("maskedPaths");
  b.config()["linux"].erase("readonlyPaths");
  auto r = run_bundle(b);
  EXPECT_EQ(r.status, 0) << r.err;
  char ours[64] = {};
  ASSERT_GT(::readlink("/proc/self/ns/mnt", ours, sizeof ours - 1), 0);
  EXPECT_EQ(r.out, "chrooted\n" + std::string(ours) + "\n");
  EXPECT_NE(r.err.find(".root.readonly: ignored without a mount namespace"), std::string::npos) << r.err;
  // our "/" kept its propagation, and the container's /proc went with it
  auto mountinfo = read_text("/proc/self/mountinfo");
  EXPECT_EQ(root_propagation(mountinfo), before);
  EXPECT_EQ(mountinfo.find(rootfs), std::string::npos) << "a mount is left below " << rootfs;
}

TEST(RuncParity, NoMountNamespaceRefusesMaskedPathsAsRunc) {
  CRX_REQUIRE_ROOT();
  Bundle b({"true"});
  remove_namespace(b.config(), "mount");
  b.config()["linux"]["maskedPaths"] = {"/proc/kcore"};
  auto r = run_bundle(b);
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.err.find(".linux.maskedPaths: needs a mount namespace"), std::string::npos) << r.err;
}

// hostname with a uts namespace joined by path: runc sets it there.
TEST(RuncParity, HostnameInAJoinedUtsNamespace) {
  CRX_REQUIRE_ROOT();
  Running holder;
  std::string ns_path = "/proc/" + std::to_string(init_pid(holder.id)) + "/ns/uts";
  Bundle b({"hostname"});
  for (auto& ns : b.config()["linux"]["namespaces"])
    if (ns["type"] == "uts") ns["path"] = ns_path;
  b.config()["hostname"] = "parity-joined";
  auto r = run_bundle(b);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "parity-joined\n");
  auto seen = run_sh("nsenter --uts=" + ns_path + " hostname");
  EXPECT_EQ(seen.out, "parity-joined\n");
}

// A relative masked or read-only path is taken from "/", as runc does.
TEST(RuncParity, RelativeMaskedPath) {
  CRX_REQUIRE_ROOT();
  Bundle b({"sh", "-c", "wc -c < /proc/version"});
  b.config()["linux"]["maskedPaths"] = {"proc/version"};
  auto r = run_bundle(b);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "0\n");
}

// What the host cannot apply is refused before anything runs, naming the
// field (runc: the same for SELinux and RDT schemas; for AppArmor it fails
// to write the profile).
TEST(RuncParity, UnsupportedSecurityAndRdtFieldsAreRefused) {
  CRX_REQUIRE_ROOT();
  struct Case {
    const char* what;
    std::function<void(json&)> edit;
    const char* expected;
  };
  std::vector<Case> cases;
  if (!linux_::apparmor_enabled())
    cases.push_back({"apparmor", [](json& c) { c["process"]["apparmorProfile"] = "crx-parity"; },
                     ".process.apparmorProfile: apparmor profile \"crx-parity\" is set but AppArmor "
                     "is not enabled on this host"});
  if (!linux_::selinux_enabled())
    cases.push_back({"selinux",
                     [](json& c) { c["process"]["selinuxLabel"] = "system_u:system_r:container_t:s0"; },
                     ".process.selinuxLabel: selinux label is specified in config, but selinux is "
                     "disabled or not supported"});
  if (!path_exists("/sys/fs/resctrl/info")) {
    cases.push_back({"rdt l3", [](json& c) { c["linux"]["intelRdt"] = {{"l3CacheSchema", "L3:0=ff"}}; },
                     ".linux.intelRdt.l3CacheSchema: intelRdt.l3CacheSchema is specified in config, "
                     "but Intel RDT/CAT is not enabled"});
    cases.push_back({"rdt mba", [](json& c) { c["linux"]["intelRdt"] = {{"memBwSchema", "MB:0=50"}}; },
                     ".linux.intelRdt.memBwSchema: intelRdt.memBwSchema is specified in config, "
                     "but Intel RDT/MBA is not enabled"});
  }
  if (cases.empty()) GTEST_SKIP() << "this host has AppArmor, SELinux and RDT";
  for (const auto& c : cases) {
    Bundle b({"true"});
    c.edit(b.config());
    auto r = run_bundle(b);
    EXPECT_NE(r.status, 0) << c.what;
    EXPECT_NE(r.err.find(c.expected), std::string::npos) << c.what << ": " << r.err;
  }
}

TEST(RuncParity, RdtClosIdAloneIsIgnoredWithoutRdt) {
  CRX_REQUIRE_ROOT();
  if (path_exists("/sys/fs/resctrl/info")) GTEST_SKIP() << "resctrl is mounted";
  Bundle b({"true"});
  b.config()["linux"]["intelRdt"] = {{"closID", "guaranteed"}};
  auto r = run_bundle(b);
  EXPECT_EQ(r.status, 0) << r.err;
}

}  // namespace
}  // namespace crx::test
