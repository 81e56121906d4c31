// checkpoint/conntrack_netlink.hpp against the real kernel: after the call
// the module is loaded. Only where the test may unload the module first, so
// that the call is what loads it: a guest (tests/vm/test_host_suite.py sets
// CRX_TEST_UNLOAD_MODULES), never the host that runs the suite.
#include "checkpoint/conntrack_netlink.hpp"

#include <unistd.h>

#include <cstdlib>

#include "harness.hpp"

namespace crx::test {
namespace {

bool loaded() { return ::access("/sys/module/nf_conntrack_netlink", F_OK) == 0; }

TEST(ConntrackNetlink, TheCallLoadsTheModule) {
  if (!std::getenv("CRX_TEST_UNLOAD_MODULES"))
    GTEST_SKIP() << "unloads a kernel module: run in a guest (CRX_TEST_UNLOAD_MODULES=1)";
  if (loaded()) {
    Result r = run_sh("modprobe -r nf_conntrack_netlink 2>&1");
    ASSERT_EQ(r.status, 0) << r.out;
  }
  ASSERT_FALSE(loaded());
  checkpoint::load_conntrack_netlink();
  EXPECT_TRUE(loaded());
  EXPECT_NO_THROW(checkpoint::load_conntrack_netlink());  // loaded: returns at once
}

}  // namespace
}  // namespace crx::test
