// crx ps, pause/resume, update and events through the crx binary.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <sstream>
#include <thread>

#include "harness.hpp"

namespace crx::test {
namespace {

using nlohmann::json;

std::string status_of(const std::string& id) { return json::parse(run_crx({"state", id}).out)["status"]; }
bool cgroup_v2() { return std::filesystem::exists("/sys/fs/cgroup/cgroup.controllers"); }


TEST(Ps, JsonListsHostPidsAndTableFiltersPs) {
  CRX_REQUIRE_ROOT();
  Running c({"sh", "-c", "sleep 1000 & sleep 1001"});
  int pid = init_pid(c.id);
  json pids;
  // the init forks its first sleep right away; wait until both are there
  for (int i = 0; i < 100; ++i) {
    auto r = run_crx({"ps", "--format", "json", c.id});
    ASSERT_EQ(r.status, 0) << r.err;
    pids = json::parse(r.out);
    if (pids.size() == 2) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ASSERT_TRUE(pids.is_array());
  EXPECT_EQ(pids.size(), 2u) << pids;
  EXPECT_NE(std::find(pids.begin(), pids.end(), pid), pids.end()) << pids;

  auto table = run_crx({"ps", c.id});
  ASSERT_EQ(table.status, 0) << table.err;
  EXPECT_EQ(table.out.rfind("UID", 0), 0u) << table.out;
  EXPECT_NE(table.out.find("sleep 1000"), std::string::npos) << table.out;
  EXPECT_NE(table.out.find("sleep 1001"), std::string::npos) << table.out;
  EXPECT_EQ(std::count(table.out.begin(), table.out.end(), '\n'), 3) << table.out;

  auto custom = run_crx({"ps", c.id, "-o", "pid,comm"});
  ASSERT_EQ(custom.status, 0) << custom.err;
  EXPECT_EQ(custom.out.find("PID"), custom.out.find_first_not_of(' ')) << custom.out;
  EXPECT_NE(custom.out.find(std::to_string(pid)), std::string::npos) << custom.out;
  EXPECT_EQ(std::count(custom.out.begin(), custom.out.end(), '\n'), 3) << custom.out;

  EXPECT_NE(run_crx({"ps", "no-such-container-xyz"}).err.find("does not exist"), std::string::npos);
}

TEST(Pause, FreezesAndResumes) {
  CRX_REQUIRE_ROOT();
  // the container counts into its own /dev/shm (a tmpfs), read from the host via /proc/<pid>/root
  Running c({"sh", "-c", "i=0; while true; do i=$((i+1)); echo $i > /dev/shm/count; done"});
  std::string file = "/proc/" + std::to_string(init_pid(c.id)) + "/root/dev/shm/count";
  auto count = [&] { return read_text(file); };
  for (int i = 0; i < 200 && count().empty(); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_EQ(run_crx({"pause", c.id}).status, 0);
  EXPECT_EQ(status_of(c.id), "paused");
  std::string frozen = count();
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(count(), frozen) << "a frozen process made progress";
  auto again = run_crx({"pause", c.id});
  EXPECT_NE(again.status, 0);
  auto exec = run_crx({"exec", c.id, "true"});
  EXPECT_NE(exec.status, 0) << "exec into a paused container is refused";

  ASSERT_EQ(run_crx({"resume", c.id}).status, 0);
  EXPECT_EQ(status_of(c.id), "running");
  std::string before = count();
  std::string after = before;
  for (int i = 0; i < 200 && after == before; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    after = count();
  }
  EXPECT_NE(after, before) << "resumed process makes progress";
  auto not_paused = run_crx({"resume", c.id});
  EXPECT_NE(not_paused.status, 0);
  EXPECT_NE(not_paused.err.find("not paused"), std::string::npos) << not_paused.err;
}

TEST(Pause, StoppedContainerIsNotRunning) {
  CRX_REQUIRE_ROOT();
  Bundle b({"true"});
  auto id = unique_id();
  ASSERT_EQ(run_crx({"run", "--keep", "--bundle", b.dir(), id}).status, 0);
  auto r = run_crx({"pause", id});
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.err.find("container not running"), std::string::npos) << r.err;
  auto u = run_crx({"update", "--pids-limit", "10", id});
  EXPECT_NE(u.err.find("container not running"), std::string::npos) << u.err;
  force_delete(id);
  expect_nothing_left(id);
  EXPECT_NE(run_crx({"pause", id}).err.find("does not exist"), std::string::npos);
}

TEST(Update, FlagsAndResourcesJsonChangeTheCgroup) {
  CRX_REQUIRE_ROOT();
  Running c({"sleep", "1000"}, [](json& cfg) {
    cfg["linux"]["resources"] = {{"memory", {{"limit", 64 * 1024 * 1024}}}, {"pids", {{"limit", 42}}}};
  });
  int pid = init_pid(c.id);
  bool v2 = cgroup_v2();
  std::string mem = v2 ? cgroup_file(pid, "", "memory.max") : cgroup_file(pid, "memory", "memory.limit_in_bytes");
  std::string pids = v2 ? cgroup_file(pid, "", "pids.max") : cgroup_file(pid, "pids", "pids.max");
  EXPECT_EQ(read_text(mem), "67108864\n");
  auto r = run_crx({"update", "--memory", "128m", "--pids-limit", "77", c.id});
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(read_text(mem), "134217728\n");
  EXPECT_EQ(read_text(pids), "77\n");

  // containerd: update --resources=- with LinuxResources on stdin
  r = run_crx({"update", "--resources=-", c.id},
              json{{"memory", {{"limit", 96 * 1024 * 1024}}}, {"pids", {{"limit", 55}}}}.dump());
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(read_text(mem), "100663296\n");
  EXPECT_EQ(read_text(pids), "55\n");

  if (!v2) {
    std::string shares = cgroup_file(pid, "cpu", "cpu.shares");
    ASSERT_EQ(run_crx({"update", "--cpu-shares", "333", "--cpu-quota", "20000", "--cpu-period", "100000", c.id}).status, 0);
    EXPECT_EQ(read_text(shares), "333\n");
    EXPECT_EQ(read_text(cgroup_file(pid, "cpu", "cpu.cfs_quota_us")), "20000\n");
  }
  auto bad = run_crx({"update", "--memory", "lots", c.id});
  EXPECT_NE(bad.status, 0);
  EXPECT_NE(bad.err.find("invalid size"), std::string::npos) << bad.err;
}

TEST(Events, StatsOnceHasRuncsShape) {
  CRX_REQUIRE_ROOT();
  Running c({"sleep", "1000"}, [](json& cfg) { cfg["linux"]["resources"] = {{"memory", {{"limit", 64 << 20}}}}; });
  auto r = run_crx({"events", "--stats", c.id});
  ASSERT_EQ(r.status, 0) << r.err;
  auto ev = json::parse(r.out);
  EXPECT_EQ(ev["type"], "stats");
  EXPECT_EQ(ev["id"], c.id);
  ASSERT_TRUE(ev["data"].is_object()) << r.out;
  EXPECT_TRUE(ev["data"].contains("memory")) << r.out;
  EXPECT_TRUE(ev["data"].contains("cpu")) << r.out;
  EXPECT_TRUE(ev["data"].contains("pids")) << r.out;
  EXPECT_GE(ev["data"]["pids"]["current"].get<int>(), 1) << r.out;
}

TEST(Events, StreamReportsAnOomKillAndEndsWithTheContainer) {
  CRX_REQUIRE_ROOT();
  Running c({"sleep", "1000"}, [](json& cfg) {
    cfg["linux"]["resources"] = {{"memory", {{"limit", 32 << 20}, {"swap", 32 << 20}}}};
  });
  TempDir tmp("crx-events");
  const std::string& dir = tmp.path();
  std::string out = dir + "/events.jsonl";
  pid_t events = ::fork();
  if (events == 0) {
    int fd = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    ::dup2(fd, 1);
    ::execl(CRX_BINARY, CRX_BINARY, "--root", state_root().c_str(), "events", "--interval", "100ms",
            c.id.c_str(), nullptr);
    ::_exit(127);
  }
  ASSERT_GT(events, 0);
  // the first stats line means the OOM watch is registered
  for (int i = 0; i < 500 && read_text(out).find("stats") == std::string::npos; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  ASSERT_NE(read_text(out).find("stats"), std::string::npos);
  auto hog = run_crx({"exec", c.id, "sh", "-c", "x=aaaaaaaaaaaaaaaa; while true; do x=$x$x; done"});
  EXPECT_EQ(hog.status, 128 + SIGKILL) << "the OOM killer ended the hog: " << hog.err;
  for (int i = 0; i < 250 && read_text(out).find("\"oom\"") == std::string::npos; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  EXPECT_EQ(run_crx({"kill", c.id, "KILL"}).status, 0);
  int status = 0;
  ASSERT_EQ(::waitpid(events, &status, 0), events);  // ends with the container
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  std::istringstream in(read_text(out));
  bool saw_oom = false;
  for (std::string line; std::getline(in, line);) {
    auto ev = json::parse(line);
    EXPECT_EQ(ev["id"], c.id);
    if (ev["type"] == "oom") saw_oom = true;
  }
  EXPECT_TRUE(saw_oom) << read_text(out);
}

}  // namespace
}  // namespace crx::test
