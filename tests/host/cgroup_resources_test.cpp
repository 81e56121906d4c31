// cgroups through crx: limits land in the container's cgroup, relative and
// absolute cgroupsPath, removed on delete.
#include <filesystem>
#include <sstream>

#include "harness.hpp"

namespace crx::test {
namespace {

using nlohmann::json;



TEST(Cgroups, MemoryPidsCpuLimitsAndRemovalOnDelete) {
  CRX_REQUIRE_ROOT();
  Bundle b({"sleep", "1000"});
  auto id = unique_id();
  b.config()["linux"]["cgroupsPath"] = "/crx-test/" + id;
  b.config()["linux"]["resources"] = {{"memory", {{"limit", 64 * 1024 * 1024}}},
                                      {"pids", {{"limit", 42}}},
                                      {"cpu", {{"shares", 512}, {"quota", 50000}, {"period", 100000}}}};
  b.write();
  ASSERT_EQ(run_crx({"run", "-d", "--bundle", b.dir(), id}).status, 0);
  int pid = init_pid(id);
  bool v2 = std::filesystem::exists("/sys/fs/cgroup/cgroup.controllers");
  if (v2) {
    EXPECT_EQ(read_text(cgroup_file(pid, "", "memory.max")), "67108864\n");
    EXPECT_EQ(read_text(cgroup_file(pid, "", "pids.max")), "42\n");
    EXPECT_EQ(read_text(cgroup_file(pid, "", "cpu.max")), "50000 100000\n");
  } else {
    EXPECT_EQ(read_text(cgroup_file(pid, "memory", "memory.limit_in_bytes")), "67108864\n");
    EXPECT_EQ(read_text(cgroup_file(pid, "pids", "pids.max")), "42\n");
    EXPECT_EQ(read_text(cgroup_file(pid, "cpu", "cpu.shares")), "512\n");
    EXPECT_EQ(read_text(cgroup_file(pid, "cpu", "cpu.cfs_quota_us")), "50000\n");
  }
  EXPECT_NE(cgroup_file(pid, v2 ? "" : "memory", "").find("/crx-test/" + id), std::string::npos);
  EXPECT_EQ(run_crx({"delete", "--force", id}).status, 0);
  expect_nothing_left(id);
}

TEST(Cgroups, DevicesAreDeniedUnlessAllowed) {
  CRX_REQUIRE_ROOT();
  // 10:200 is /dev/net/tun: not among the devices every container may use,
  // and opening it needs no capability
  Bundle b({"sh", "-c", "(exec 3</dev/mydev) 2>/dev/null && echo readable || echo denied"});
  b.config()["linux"]["devices"] = json::array({{{"path", "/dev/mydev"}, {"type", "c"}, {"major", 10}, {"minor", 200}}});
  // listed devices are allowed: readable
  b.write();
  auto id = unique_id();
  auto r = run_crx({"run", "--bundle", b.dir(), id});
  EXPECT_EQ(r.out, "readable\n") << r.err;
  // the same node under another name, not listed as a device: mknod it in a tmpfs
  Bundle d({"sh", "-c", "mknod /mnt/tun c 10 200 && (exec 3</mnt/tun) 2>/dev/null && echo readable || echo denied"});
  d.config()["mounts"].push_back({{"destination", "/mnt"}, {"type", "tmpfs"}, {"source", "tmpfs"}, {"options", {"mode=755"}}});
  d.config()["process"]["capabilities"]["bounding"].push_back("CAP_MKNOD");
  d.config()["process"]["capabilities"]["effective"].push_back("CAP_MKNOD");
  d.config()["process"]["capabilities"]["permitted"].push_back("CAP_MKNOD");
  d.config()["linux"]["resources"]["devices"] = json::array({{{"allow", false}, {"access", "rwm"}}, {{"allow", true}, {"type", "c"}, {"major", 10}, {"minor", 200}, {"access", "m"}}});
  d.write();
  auto id2 = unique_id();
  r = run_crx({"run", "--bundle", d.dir(), id2});
  EXPECT_EQ(r.out, "denied\n") << r.err;
}

}  // namespace
}  // namespace crx::test
