// PhaseClock: each phase's wall time and the CPU it cost, crx's and its
// reaped children's, as the report shows them.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <nlohmann/json.hpp>
#include <thread>

#include "migrate/report.hpp"

namespace {

using namespace crx::migrate;

double thread_cpu() {
  timespec t{};
  ::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
  return double(t.tv_sec) + double(t.tv_nsec) / 1e9;
}

// Spins until this thread has used `seconds` of CPU.
void burn(double seconds) {
  double until = thread_cpu() + seconds;
  volatile unsigned x = 0;
  while (thread_cpu() < until) x = x + 1;
}

TEST(PhaseClock, EachPhaseCarriesTheCpuItCost) {
  MigrationReport r;
  PhaseClock clock(r);
  clock.begin("busy");
  burn(0.08);
  clock.begin("idle");
  std::this_thread::sleep_for(std::chrono::milliseconds(80));
  clock.begin("other thread");
  std::thread([] { burn(0.08); }).join();
  clock.begin("child");
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    burn(0.08);
    ::_exit(0);
  }
  ASSERT_EQ(::waitpid(pid, nullptr, 0), pid);
  clock.end();

  ASSERT_EQ(r.phases.size(), 4u);
  const auto& busy = r.phases[0];
  const auto& idle = r.phases[1];
  const auto& thread = r.phases[2];
  const auto& child = r.phases[3];
  EXPECT_GE(busy.cpu_seconds, 0.08);
  EXPECT_LT(busy.child_cpu_seconds, 0.04);
  EXPECT_GE(idle.seconds, 0.08);
  EXPECT_LT(idle.cpu_seconds, 0.04) << "sleeping costs no CPU";
  EXPECT_GE(thread.cpu_seconds, 0.08) << "every thread of crx counts";
  EXPECT_GE(child.child_cpu_seconds, 0.08) << "a reaped child counts as the phase's";
  EXPECT_LT(child.cpu_seconds, 0.04);

  auto j = nlohmann::json::parse(r.to_json());
  EXPECT_DOUBLE_EQ(j["phases"][0]["cpu_seconds"].get<double>(), busy.cpu_seconds);
  EXPECT_DOUBLE_EQ(j["phases"][3]["child_cpu_seconds"].get<double>(), child.child_cpu_seconds);
  EXPECT_NE(r.to_text().find("busy"), std::string::npos);
  EXPECT_NE(r.to_text().find("cpu "), std::string::npos);
}

}  // namespace
