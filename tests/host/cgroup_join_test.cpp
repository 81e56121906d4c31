// The container's processes land in every hierarchy of its cgroup, however
// crx gets them there: the init joins v1 itself (tasks) after being born in
// the cgroup2 part (clone3), the init of a user-namespaced container is
// attached by crx, an exec'd process goes the init's way.
#include <gtest/gtest.h>
#include <unistd.h>

#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include "harness.hpp"

using namespace crx::test;
using json = nlohmann::json;

namespace {

// Lines of /proc/<pid>/cgroup ("7:blkio:/x", "0::/x").
std::vector<std::string> cgroup_lines(int pid) {
  std::istringstream in(read_text("/proc/" + std::to_string(pid) + "/cgroup"));
  std::vector<std::string> lines;
  for (std::string l; std::getline(in, l);)
    if (!l.empty()) lines.push_back(l);
  return lines;
}

// Every hierarchy the host has, and in each the process sits in `path`.
void expect_in_every_hierarchy(int pid, const std::string& path) {
  auto host = cgroup_lines(::getpid());
  auto lines = cgroup_lines(pid);
  EXPECT_EQ(lines.size(), host.size()) << read_text("/proc/" + std::to_string(pid) + "/cgroup");
  for (const auto& l : lines) {
    std::string where = l.substr(l.find(':', l.find(':') + 1) + 1);
    EXPECT_EQ(where, path) << "hierarchy line " << l;
  }
}

void run_and_check(const std::function<void(json&)>& edit) {
  std::string path = "/crx-join-" + unique_id("cg");
  Running c({"sleep", "1000"}, [&](json& cfg) {
    cfg["linux"]["cgroupsPath"] = path;
    if (edit) edit(cfg);
  });
  expect_in_every_hierarchy(init_pid(c.id), path);

  TempDir tmp("crx-cg-join");
  const std::string& dir = tmp.path();
  std::string pid_file = dir + "/exec.pid";
  auto r = run_crx_detached({"exec", "--detach", "--pid-file", pid_file, c.id, "sleep", "1000"});
  ASSERT_EQ(r.status, 0) << r.err;
  expect_in_every_hierarchy(std::stoi(read_text(pid_file)), path);
}

}  // namespace

TEST(CgroupJoin, InitAndExecAreInEveryHierarchy) {
  CRX_REQUIRE_ROOT();
  run_and_check({});
}

TEST(CgroupJoin, UserNamespacedInitAndExecAreInEveryHierarchy) {
  CRX_REQUIRE_ROOT();
  run_and_check([](json& cfg) {
    cfg["linux"]["namespaces"].push_back({{"type", "user"}});
    cfg["linux"]["uidMappings"] = json::array({{{"containerID", 0}, {"hostID", 100000}, {"size", 65536}}});
    cfg["linux"]["gidMappings"] = json::array({{{"containerID", 0}, {"hostID", 100000}, {"size", 65536}}});
  });
}

TEST(CgroupJoin, CgroupNamespaceIsRootedAtTheContainerCgroup) {
  CRX_REQUIRE_ROOT();
  Bundle b({"cat", "/proc/self/cgroup"});  // crx spec has a cgroup namespace
  b.config()["linux"]["cgroupsPath"] = "/crx-join-" + unique_id("ns");
  b.write();
  auto r = run_crx({"run", "--bundle", b.dir(), unique_id("ns")});
  ASSERT_EQ(r.status, 0) << r.err;
  std::istringstream in(r.out);
  int lines = 0;
  for (std::string l; std::getline(in, l); ++lines)
    EXPECT_EQ(l.substr(l.size() - 2), ":/") << "inside its cgroup namespace the container is at the root: " << r.out;
  EXPECT_GT(lines, 0);
}
