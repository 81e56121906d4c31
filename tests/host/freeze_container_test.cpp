// checkpoint::freeze_container, the first step of a migration's frozen
// window, against a running container: it freezes through the cgroup
// prepare_source() loaded (state.json and config.json are not read again),
// and refuses a container whose init is gone by then, naming it.
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include "checkpoint/container_checkpoint.hpp"
#include "common/error.hpp"
#include "harness.hpp"

namespace crx::test {
namespace {

TEST(FreezeContainer, FreezesThroughTheLoadedCgroupAndRefusesAnInitThatIsGone) {
  CRX_REQUIRE_ROOT();
  Running c;
  container::GlobalOptions g;
  g.root = state_root();
  const checkpoint::SourceContainer s = checkpoint::prepare_source(g, c.id, {});
  ASSERT_EQ(s.pid, init_pid(c.id));
  ASSERT_FALSE(s.paused);

  checkpoint::freeze_container(s);
  EXPECT_EQ(state_of(c.id)["status"], "paused");  // a frozen cgroup, as `crx pause` leaves it
  checkpoint::thaw_container(g, c.id);
  EXPECT_EQ(state_of(c.id)["status"], "running");

  ASSERT_EQ(::kill(s.pid, SIGKILL), 0);
  for (int i = 0; i < 500 && !process_gone(s.pid); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_TRUE(process_gone(s.pid));
  try {
    checkpoint::freeze_container(s);
    ADD_FAILURE() << "froze a container whose init is gone";
  } catch (const Error& e) {
    EXPECT_EQ(e.cause(), Cause::NotFound) << e.what();
    EXPECT_NE(std::string(e.what()).find("container " + c.id + " stopped"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace crx::test
