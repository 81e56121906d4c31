// checkpoint::freeze_container, the first step of a migration's frozen
// window, against a running container: it freezes through the cgroup
// prepare_source() loaded (state.json and config.json are not read again),
// and refuses a container whose init is gone by then, naming it; and the
// QPs stopped at the freeze are found through the cgroup known before it.
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <thread>

#include <cstdio>

#include "checkpoint/container_checkpoint.hpp"
#include "common/error.hpp"
#include "harness.hpp"
#include "rdma/container_qps.hpp"

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

// A migration stops the container's QPs at the freeze: the cgroup its
// preflight found is asked again, state.json is not read (parsing it was
// most of the 14 ms a container without QPs cost the frozen window).
TEST(FreezeContainer, QpsAreStoppedThroughTheCgroupTheirPreflightFound) {
  CRX_REQUIRE_ROOT();
  std::string id;
  {
    Running c;
    id = c.id;
    container::GlobalOptions g;
    g.root = state_root();
    rdma::ContainerQps qps(g);
    EXPECT_TRUE(qps.inventory(c.id).empty());  // the preflight
    const std::string state = state_root() + "/" + c.id + "/state.json";
    ASSERT_EQ(std::rename(state.c_str(), (state + ".away").c_str()), 0);
    int stopped = -1;
    EXPECT_NO_THROW(stopped = qps.stop_all(c.id));
    EXPECT_EQ(stopped, 0);
    // Asked for the first time, the state is what says where to look.
    EXPECT_THROW(rdma::ContainerQps(g).stop_all(c.id), Error);
    ASSERT_EQ(std::rename((state + ".away").c_str(), state.c_str()), 0);
  }
  expect_nothing_left(id);
}

}  // namespace
}  // namespace crx::test
