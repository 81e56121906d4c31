// Where a container's cgroup goes, from mountinfo and /proc/self/cgroup text.
#include <gtest/gtest.h>

#include "common/error.hpp"
#include "cgroup/cgroup.hpp"
#include "cgroup/paths.hpp"

namespace cg = crx::cgroup;

namespace {

// The hybrid layout of the development machines (trimmed /proc/self/mountinfo).
const char* kHybridMountinfo =
    "24 30 0:22 / /sys rw,nosuid,nodev,noexec,relatime shared:7 - sysfs sysfs rw\n"
    "25 24 0:23 / /sys/fs/cgroup rw,relatime shared:8 - tmpfs tmpfs rw,mode=755\n"
    "26 25 0:24 / /sys/fs/cgroup/cpu rw,relatime shared:9 - cgroup cgroup rw,cpu\n"
    "27 25 0:25 / /sys/fs/cgroup/cpuacct rw,relatime shared:10 - cgroup cgroup rw,cpuacct\n"
    "28 25 0:26 / /sys/fs/cgroup/memory rw,relatime shared:11 - cgroup cgroup rw,memory\n"
    "29 25 0:27 / /sys/fs/cgroup/systemd rw,relatime shared:12 - cgroup cgroup "
    "rw,xattr,name=systemd\n"
    "30 25 0:28 / /sys/fs/cgroup/unified rw,relatime shared:13 - cgroup2 cgroup2 rw\n"
    "31 25 0:29 / /sys/fs/cgroup/net_cls,net_prio rw shared:14 - cgroup cgroup "
    "rw,net_cls,net_prio\n";

const char* kHybridProcCgroup =
    "9:name=systemd:/\n"
    "4:memory:/process_api/abc\n"
    "2:cpuacct:/\n"
    "1:cpu:/\n"
    "3:net_cls,net_prio:/n\n"
    "0::/user.slice/session-1.scope\n";

cg::Placement hybrid() {
  cg::Placement p;
  p.hierarchies = cg::parse_mountinfo(kHybridMountinfo);
  p.own = cg::parse_proc_cgroup(kHybridProcCgroup);
  p.use_v1 = true;
  return p;
}

TEST(CgroupPaths, MountinfoFindsV1ControllersAndTheUnifiedHierarchy) {
  auto hs = cg::parse_mountinfo(kHybridMountinfo);
  ASSERT_EQ(hs.size(), 6u);  // tmpfs and sysfs are not hierarchies
  EXPECT_EQ(hs[0].mountpoint, "/sys/fs/cgroup/cpu");
  EXPECT_EQ(hs[0].controllers, std::vector<std::string>{"cpu"});
  EXPECT_FALSE(hs[0].v2);
  EXPECT_EQ(hs[3].controllers, std::vector<std::string>{"name=systemd"});  // xattr is no controller
  EXPECT_TRUE(hs[4].v2);
  EXPECT_EQ(hs[4].mountpoint, "/sys/fs/cgroup/unified");
  EXPECT_EQ(hs[5].controllers, (std::vector<std::string>{"net_cls", "net_prio"}));
}

TEST(CgroupPaths, MountinfoUnescapesOctal) {
  auto hs = cg::parse_mountinfo(
      "30 25 0:28 /a\\040b /mnt/my\\040cg rw - cgroup2 cgroup2 rw\n");
  ASSERT_EQ(hs.size(), 1u);
  EXPECT_EQ(hs[0].mountpoint, "/mnt/my cg");
  EXPECT_EQ(hs[0].root, "/a b");
}

TEST(CgroupPaths, ProcCgroupSplitsCombinedControllers) {
  auto own = cg::parse_proc_cgroup(kHybridProcCgroup);
  EXPECT_EQ(own.at("memory"), "/process_api/abc");
  EXPECT_EQ(own.at("net_cls"), "/n");
  EXPECT_EQ(own.at("net_prio"), "/n");
  EXPECT_EQ(own.at("name=systemd"), "/");
  EXPECT_EQ(own.at(""), "/user.slice/session-1.scope");
}

TEST(CgroupPaths, CleanNeverClimbsAboveTheStart) {
  EXPECT_EQ(cg::clean_cgroup_path("/a/b/"), "/a/b");
  EXPECT_EQ(cg::clean_cgroup_path("//a/./b"), "/a/b");
  EXPECT_EQ(cg::clean_cgroup_path("/a/../../b"), "/b");
  EXPECT_EQ(cg::clean_cgroup_path("../../etc"), "etc");
  EXPECT_EQ(cg::clean_cgroup_path("a/b/.."), "a");
  EXPECT_EQ(cg::clean_cgroup_path("/.."), "/");
  EXPECT_EQ(cg::clean_cgroup_path(""), "");
}

TEST(CgroupPaths, AbsolutePathHangsFromEachHierarchyRoot) {
  auto dirs = cg::container_dirs(hybrid(), "/crx/c1");
  EXPECT_EQ(dirs.at("cpu"), "/sys/fs/cgroup/cpu/crx/c1");
  EXPECT_EQ(dirs.at("memory"), "/sys/fs/cgroup/memory/crx/c1");
  EXPECT_EQ(dirs.at("name=systemd"), "/sys/fs/cgroup/systemd/crx/c1");
  EXPECT_EQ(dirs.at("net_prio"), "/sys/fs/cgroup/net_cls,net_prio/crx/c1");
  EXPECT_EQ(dirs.at("unified"), "/sys/fs/cgroup/unified/crx/c1");
}

TEST(CgroupPaths, RelativePathGoesBelowOwnCgroupInV1AndItsParentInV2) {
  auto dirs = cg::container_dirs(hybrid(), "c1");
  EXPECT_EQ(dirs.at("memory"), "/sys/fs/cgroup/memory/process_api/abc/c1");
  EXPECT_EQ(dirs.at("cpu"), "/sys/fs/cgroup/cpu/c1");
  EXPECT_EQ(dirs.at("net_cls"), "/sys/fs/cgroup/net_cls,net_prio/n/c1");
  // crx's own v2 cgroup has processes: the container goes next to it.
  EXPECT_EQ(dirs.at("unified"), "/sys/fs/cgroup/unified/user.slice/c1");
}

TEST(CgroupPaths, RelativePathCannotEscapeWithDotDot) {
  auto dirs = cg::container_dirs(hybrid(), "../../../x");
  EXPECT_EQ(dirs.at("memory"), "/sys/fs/cgroup/memory/process_api/abc/x");
}

TEST(CgroupPaths, PureV2UsesOnlyTheCgroup2Mount) {
  cg::Placement p;
  p.hierarchies = cg::parse_mountinfo(
      "30 25 0:28 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw,nsdelegate\n"
      "31 25 0:29 / /sys/fs/cgroup/systemd rw - cgroup cgroup rw,name=systemd\n");
  p.own = cg::parse_proc_cgroup("0::/\n");
  p.use_v1 = false;
  auto dirs = cg::container_dirs(p, "c1");
  ASSERT_EQ(dirs.size(), 1u);
  EXPECT_EQ(dirs.at("unified"), "/sys/fs/cgroup/c1");
}

TEST(CgroupPaths, OwnCgroupIsTakenRelativeToTheMountRoot) {
  // Inside a cgroup namespace-less bind mount of /machine/box at /sys/fs/cgroup.
  cg::Placement p;
  p.hierarchies = cg::parse_mountinfo(
      "30 25 0:28 /machine/box /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n");
  p.own = cg::parse_proc_cgroup("0::/machine/box/init\n");
  p.use_v1 = false;
  EXPECT_EQ(cg::container_dirs(p, "c1").at("unified"), "/sys/fs/cgroup/c1");
}

TEST(CgroupPaths, SystemdSliceExpansion) {
  EXPECT_EQ(cg::systemd_cgroup_path("system.slice:crx:abc", "id"), "/system.slice/crx-abc.scope");
  EXPECT_EQ(cg::systemd_cgroup_path("a-b.slice:p:n", "id"), "/a.slice/a-b.slice/p-n.scope");
  EXPECT_EQ(cg::systemd_cgroup_path("-.slice:p:n", "id"), "/p-n.scope");
  EXPECT_EQ(cg::systemd_cgroup_path("", "c9"), "/system.slice/crx-c9.scope");
  EXPECT_EQ(cg::systemd_cgroup_path("user.slice::my.slice", "id"), "/user.slice/my.slice");
}

TEST(CgroupPaths, SystemdBadFormsAreRefusedWithThePath) {
  for (const char* bad : {"/a/b", "a:b", "system.slice:p:", "nope:p:n", "a--b.slice:p:n",
                          "system.slice:p:a/b"}) {
    try {
      cg::systemd_cgroup_path(bad, "id");
      ADD_FAILURE() << "accepted " << bad;
    } catch (const crx::Error& e) {
      EXPECT_NE(std::string(e.what()).find(bad), std::string::npos) << e.what();
    }
  }
}

TEST(CgroupState, LoadRefusesDirectoriesOutsideCgroupfs) {
  nlohmann::json j = {{"layout", "hybrid"},
                      {"path", "/c"},
                      {"dirs", {{"memory", "/etc/x"}}},
                      {"created", nlohmann::json::array()}};
  EXPECT_THROW(cg::Cgroup::load(j), crx::Error);
  j["dirs"] = {{"memory", "/sys/fs/cgroup/memory/../../../etc"}};
  EXPECT_THROW(cg::Cgroup::load(j), crx::Error);
  j["dirs"] = {{"memory", "/sys/fs/cgroup/memory/c"}};
  j["layout"] = "v3";
  EXPECT_THROW(cg::Cgroup::load(j), crx::Error);
}

TEST(CgroupState, SaveLoadRoundTrip) {
  nlohmann::json j = {{"layout", "hybrid"},
                      {"path", "/c"},
                      {"dirs", {{"memory", "/sys/fs/cgroup/memory/c"},
                                {"unified", "/sys/fs/cgroup/unified/c"}}},
                      {"created", {"/sys/fs/cgroup/memory/c"}}};
  auto c = cg::Cgroup::load(j);
  EXPECT_EQ(c.layout(), cg::Layout::Hybrid);
  EXPECT_EQ(c.path_for("memory"), "/sys/fs/cgroup/memory/c");
  EXPECT_EQ(c.path_for("cpu"), "");
  EXPECT_EQ(c.save(), j);
}

TEST(CgroupState, OnV2EveryControllerIsTheOneDirectory) {
  auto c = cg::Cgroup::load({{"layout", "v2"},
                             {"path", "/c"},
                             {"dirs", {{"unified", "/sys/fs/cgroup/c"}}},
                             {"created", nlohmann::json::array()}});
  EXPECT_EQ(c.path_for("memory"), "/sys/fs/cgroup/c");
  EXPECT_EQ(c.path_for("freezer"), "/sys/fs/cgroup/c");
}

TEST(CgroupDevices, EffectiveResourcesAddLinuxDevicesThenDefaults) {
  crx::spec::Linux linux;
  crx::spec::Resources res;
  crx::spec::DeviceRule deny_all;
  res.devices.push_back(deny_all);
  linux.resources = res;
  crx::spec::Device fuse;
  fuse.path = "/dev/fuse";
  fuse.type = 'c';
  fuse.major = 10;
  fuse.minor = 229;
  linux.devices.push_back(fuse);
  auto eff = cg::effective_resources(linux);
  ASSERT_EQ(eff.devices.size(), 2 + cg::default_device_rules().size());
  EXPECT_FALSE(eff.devices[0].allow);
  EXPECT_TRUE(eff.devices[1].allow);
  EXPECT_EQ(eff.devices[1].major, 10);
  EXPECT_EQ(eff.devices[1].minor, 229);
}

}  // namespace

TEST(CriuCgroupRoots, PureV2IsOneDefaultRootInsideTheHierarchy) {
  std::vector<cg::Hierarchy> hs{{"/sys/fs/cgroup", "/", true, {}}};
  auto roots = cg::criu_cgroup_roots(hs, {{"unified", "/sys/fs/cgroup/crx/new-id"}});
  ASSERT_EQ(roots.size(), 1u);
  EXPECT_EQ(roots[0].first, "");
  EXPECT_EQ(roots[0].second, "/crx/new-id");
}

TEST(CriuCgroupRoots, HybridNamesEachV1ControllerAndUsesTheLongestMount) {
  std::vector<cg::Hierarchy> hs{{"/sys/fs/cgroup/memory", "/", false, {"memory"}},
                                {"/sys/fs/cgroup/unified", "/", true, {}},
                                {"/sys/fs/cgroup/cpu,cpuacct", "/base", false, {"cpu", "cpuacct"}}};
  auto roots = cg::criu_cgroup_roots(hs, {{"memory", "/sys/fs/cgroup/memory/a/b"},
                                          {"cpu", "/sys/fs/cgroup/cpu,cpuacct/a/b"},
                                          {"unified", "/sys/fs/cgroup/unified/a/b"}});
  std::map<std::string, std::string> got(roots.begin(), roots.end());
  EXPECT_EQ(got, (std::map<std::string, std::string>{
                     {"memory", "/a/b"}, {"cpu", "/base/a/b"}, {"", "/a/b"}}));
}

TEST(CriuCgroupRoots, ADirectoryOnNoHierarchyIsAnError) {
  std::vector<cg::Hierarchy> hs{{"/sys/fs/cgroup", "/", true, {}}};
  EXPECT_THROW(cg::criu_cgroup_roots(hs, {{"unified", "/tmp/x"}}), crx::Error);
}

// What a migration's two ends compare before the final dump leaves the
// cgroup out (Acceptance::cgroup_path): a pure cgroup2 cgroup's path, and
// none where v1 hierarchies are in play.
TEST(CriuCgroupRoots, OnlyAPureV2CgroupHasACriuV2Path) {
  std::vector<cg::Hierarchy> v2{{"/sys/fs/cgroup", "/", true, {}}};
  EXPECT_EQ(cg::criu_v2_path(v2, {{"unified", "/sys/fs/cgroup/crx/c1"}}), "/crx/c1");
  std::vector<cg::Hierarchy> hybrid{{"/sys/fs/cgroup/memory", "/", false, {"memory"}},
                                    {"/sys/fs/cgroup/unified", "/", true, {}}};
  EXPECT_EQ(cg::criu_v2_path(hybrid, {{"memory", "/sys/fs/cgroup/memory/c1"},
                                      {"unified", "/sys/fs/cgroup/unified/c1"}}),
            "");
  EXPECT_EQ(cg::criu_v2_path(hybrid, {{"memory", "/sys/fs/cgroup/memory/c1"}}), "");
  EXPECT_EQ(cg::criu_v2_path(v2, {}), "");
}
