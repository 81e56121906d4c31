// 500 create/start/kill/delete cycles leave no mount, cgroup, process or
// state behind; concurrent commands on one container do not race.
#include <sys/wait.h>

#include <atomic>
#include <filesystem>
#include <thread>

#include "harness.hpp"

namespace crx::test {
namespace {

using nlohmann::json;

size_t count_lines(const std::string& s) { return static_cast<size_t>(std::count(s.begin(), s.end(), '\n')); }

std::string process_snapshot() { return run_sh("ps -eo pid= | wc -l").out; }

TEST(Leak, FiveHundredCyclesLeaveNothingBehind) {
  CRX_REQUIRE_ROOT();
  int cycles = std::getenv("CRX_LEAK_CYCLES") ? std::atoi(std::getenv("CRX_LEAK_CYCLES")) : 500;
  Bundle b({"sleep", "1000"});
  size_t mounts_before = count_lines(read_text("/proc/self/mountinfo"));
  int procs_before = std::stoi(process_snapshot());
  std::string base = "leak-" + std::to_string(::getpid()) + "-";
  for (int i = 0; i < cycles; ++i) {
    std::string id = base + std::to_string(i);
    ASSERT_EQ(run_crx({"create", "--bundle", b.dir(), id}).status, 0) << "cycle " << i;
    ASSERT_EQ(run_crx({"start", id}).status, 0) << "cycle " << i;
    ASSERT_EQ(run_crx({"kill", id, "KILL"}).status, 0) << "cycle " << i;
    auto r = run_crx({"delete", "--force", id});
    ASSERT_EQ(r.status, 0) << "cycle " << i << ": " << r.err;
  }
  EXPECT_EQ(count_lines(read_text("/proc/self/mountinfo")), mounts_before);
  for (auto& e : std::filesystem::directory_iterator(state_root()))
    EXPECT_EQ(e.path().filename().string().rfind(base, 0), std::string::npos) << e.path();
  EXPECT_TRUE(run_sh("find /sys/fs/cgroup -maxdepth 4 -type d -name '" + base + "*' | head -1").out.empty());
  EXPECT_TRUE(run_sh("pgrep -f 'sleep 1000' -P 1 | head -1").out.empty() ||
              std::stoi(process_snapshot()) <= procs_before + 2);
}

TEST(Concurrency, ParallelCommandsOnOneContainerDoNotRace) {
  CRX_REQUIRE_ROOT();
  Bundle b({"sleep", "1000"});
  auto id = unique_id();
  ASSERT_EQ(run_crx({"create", "--bundle", b.dir(), id}).status, 0);
  std::vector<std::thread> threads;
  std::atomic<int> started{0}, deleted{0};
  for (int i = 0; i < 4; ++i)
    threads.emplace_back([&] {
      if (run_crx({"start", id}).status == 0) ++started;
    });
  for (auto& t : threads) t.join();
  EXPECT_EQ(started.load(), 1);  // exactly one start wins
  threads.clear();
  for (int i = 0; i < 4; ++i)
    threads.emplace_back([&] {
      if (run_crx({"delete", "--force", id}).status == 0) ++deleted;
    });
  for (auto& t : threads) t.join();
  EXPECT_GE(deleted.load(), 1);
  expect_nothing_left(id);
}

}  // namespace
}  // namespace crx::test
