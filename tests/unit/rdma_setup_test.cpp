// `crx rdma setup` / `status` decisions on a fake node.
#include <gtest/gtest.h>

#include "fake_rdma_host.hpp"
#include "rdma/rdma_error.hpp"
#include "rdma/rxe_setup.hpp"

namespace {

using namespace crx;
using rdma::RdmaCause;

rdma::RdmaConfig node_config() {
  rdma::RdmaConfig c;
  c.netdev = "eth0";
  c.qpn_min = 0x1000;
  c.qpn_max = 0x1fff;
  c.mrn_min = 0x1000;
  c.mrn_max = 0x1fff;
  c.ahn_min = 0x1000;
  c.ahn_max = 0x1fff;
  return c;
}

RdmaCause setup_cause(test::FakeRdmaHost& h, const rdma::RdmaConfig& c) {
  try {
    rdma::setup_rxe(c, h);
  } catch (const rdma::RdmaError& e) {
    return e.cause();
  }
  ADD_FAILURE() << "setup passed";
  return RdmaCause::System;
}

TEST(RdmaSetup, LoadsWithRangesAddsDeviceAndIsIdempotent) {
  test::FakeRdmaHost h;
  std::string out = rdma::setup_rxe(node_config(), h);
  std::vector<std::string> want = {
      "modprobe rdma_rxe qpn_min=4096 qpn_max=8191 mrn_min=4096 mrn_max=8191 ahn_min=4096 "
      "ahn_max=8191",
      "rdma link add rxe0 type rxe netdev eth0"};
  EXPECT_EQ(h.actions, want);
  EXPECT_NE(out.find("rxe0: port 1 4: ACTIVE"), std::string::npos) << out;
  h.actions.clear();
  rdma::setup_rxe(node_config(), h);
  EXPECT_TRUE(h.actions.empty());  // nothing to do the second time
  std::string st = rdma::rxe_status(h);
  EXPECT_NE(st.find("qpn_min 4096"), std::string::npos) << st;
  EXPECT_NE(st.find("device rxe0: port 1 4: ACTIVE"), std::string::npos) << st;
}

TEST(RdmaSetup, StockModuleLoadedIsRefused) {
  test::FakeRdmaHost h;
  h.loaded = true;  // no parameters: the stock rdma_rxe
  EXPECT_EQ(setup_cause(h, node_config()), RdmaCause::NoPatchedModule);
  EXPECT_TRUE(h.actions.empty());
  EXPECT_NE(rdma::rxe_status(h).find("not crx's patched module"), std::string::npos);
}

TEST(RdmaSetup, PatchedModuleWithoutAhRangesIsRefused) {
  test::FakeRdmaHost h;  // an older crx module: QPN and MR ranges only
  h.load_patched({{"qpn_min", "4096"}, {"qpn_max", "8191"}, {"mrn_min", "4096"}, {"mrn_max", "8191"}});
  EXPECT_EQ(setup_cause(h, node_config()), RdmaCause::NoPatchedModule);
  EXPECT_TRUE(h.actions.empty());
}

TEST(RdmaSetup, StockModuleFromModprobeIsUnloadedAgain) {
  test::FakeRdmaHost h;
  h.patched = false;
  EXPECT_EQ(setup_cause(h, node_config()), RdmaCause::NoPatchedModule);
  ASSERT_EQ(h.actions.size(), 2u);
  EXPECT_EQ(h.actions[1], "modprobe -r rdma_rxe");
  EXPECT_FALSE(h.loaded);
}

TEST(RdmaSetup, OtherRangesReloadUnlessInUse) {
  test::FakeRdmaHost h;
  h.load_patched({{"qpn_min", "0"}, {"qpn_max", "0"}, {"mrn_min", "0"}, {"mrn_max", "0"},
                  {"ahn_min", "0"}, {"ahn_max", "0"}});
  h.ports["rxe0"] = "4: ACTIVE";
  h.refcount = 2;
  EXPECT_EQ(setup_cause(h, node_config()), RdmaCause::ModuleInUse);
  EXPECT_TRUE(h.actions.empty());
  h.refcount = 0;
  rdma::setup_rxe(node_config(), h);
  ASSERT_EQ(h.actions.size(), 3u);
  EXPECT_EQ(h.actions[0], "modprobe -r rdma_rxe");
  EXPECT_EQ(h.params["qpn_min"], "4096");
  EXPECT_EQ(h.actions[2], "rdma link add rxe0 type rxe netdev eth0");
}

TEST(RdmaSetup, MissingNetdevNamesTheKey) {
  test::FakeRdmaHost h;
  auto c = node_config();
  c.netdev.clear();
  try {
    rdma::setup_rxe(c, h);
    FAIL();
  } catch (const rdma::RdmaError& e) {
    EXPECT_EQ(e.cause(), RdmaCause::BadConfig);
    EXPECT_NE(std::string(e.what()).find("rdma.netdev"), std::string::npos);
  }
}

}  // namespace
