// Concurrent commands on one container do not race. (Create/start/kill/
// delete cycles that leave nothing behind: tests/soak/host_cycles_test.cpp.)
#include <atomic>
#include <thread>

#include "harness.hpp"

namespace crx::test {
namespace {

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
