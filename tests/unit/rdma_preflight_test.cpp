// The receiver's RDMA preflight decisions, on a fake node; and reading
// iproute2's `rdma -j resource show` output.
#include <gtest/gtest.h>

#include "fake_rdma_host.hpp"
#include "rdma/preflight.hpp"
#include "rdma/rdma_error.hpp"
#include "rdma/rdma_resources.hpp"

namespace {

using namespace crx;
using rdma::RdmaCause;

// As iproute2 6.1 prints them (rdma -j res show qp / mr).
constexpr const char* kQpJson =
    R"([{"ifindex":2,"ifname":"rxe0","port":1,"lqpn":1,"type":"GSI","state":"RTS","sq-psn":0,"comm":"[ib_core]"},)"
    R"({"ifindex":2,"ifname":"rxe0","port":1,"lqpn":4113,"rqpn":4114,"type":"RC","state":"RTS","pid":812,"comm":"app"}])";
constexpr const char* kMrJson =
    // as iproute2 prints it: "mrn" is the RDMA core's resource id, rxe's MR
    // index is lkey >> 8 (0x1002 = 4098)
    R"([{"ifindex":2,"ifname":"rxe0","mrn":3,"rkey":"0x100247","lkey":"0x100247","mrlen":4096,"pdn":3,"pid":812,"comm":"app"}])";

rdma::RdmaInventory container() {
  rdma::RdmaInventory inv;
  inv.contexts = 1;
  inv.devices = {"rxe0"};
  inv.qpns = {0x2011};
  inv.mrns = {0x2002};
  inv.counts.qp = 1;
  inv.counts.mr = 1;
  return inv;
}

test::FakeRdmaHost ready_node() {
  test::FakeRdmaHost h;
  h.load_patched({{"qpn_min", "8192"}, {"qpn_max", "12287"}, {"mrn_min", "8192"}, {"mrn_max", "12287"}});
  h.ports["rxe0"] = "4: ACTIVE";
  h.json["qp"] = kQpJson;
  h.json["mr"] = kMrJson;
  return h;
}

RdmaCause cause_of(const rdma::RdmaInventory& inv, rdma::RdmaHost& h, std::string* what = nullptr) {
  try {
    rdma::check_destination(inv, h);
  } catch (const rdma::RdmaError& e) {
    if (what) *what = e.what();
    return e.cause();
  }
  ADD_FAILURE() << "preflight passed";
  return RdmaCause::System;
}

TEST(RdmaResources, ReadsNumbersAndDevices) {
  auto qps = rdma::parse_rdma_resources(kQpJson, "lqpn");
  ASSERT_EQ(qps.size(), 2u);
  EXPECT_EQ(qps[1].number, 4113u);
  EXPECT_EQ(qps[1].device, "rxe0");
  auto mrs = rdma::parse_rdma_mr_indices(kMrJson);
  ASSERT_EQ(mrs.size(), 1u);
  EXPECT_EQ(mrs[0].number, 4098u);
  EXPECT_EQ(mrs[0].device, "rxe0");
  // keys as numbers are read too; an MR without its keys shown (no
  // CAP_NET_ADMIN) or with a malformed one is skipped
  EXPECT_EQ(rdma::parse_rdma_mr_indices(R"([{"mrn":1,"lkey":1048903}])").at(0).number, 4097u);
  EXPECT_TRUE(rdma::parse_rdma_mr_indices(R"([{"mrn":4098}])").empty());
  EXPECT_TRUE(rdma::parse_rdma_mr_indices(R"([{"mrn":1,"lkey":"0xzz"}])").empty());
  // Older iproute2 nests the array; nothing at all for an empty table.
  EXPECT_EQ(rdma::parse_rdma_resources(R"({"rxe0":[{"lqpn":7}]})", "lqpn").size(), 1u);
  EXPECT_TRUE(rdma::parse_rdma_resources("\n", "lqpn").empty());
  try {
    rdma::parse_rdma_resources("lqpn 1 type GSI", "lqpn");
    FAIL();
  } catch (const rdma::RdmaError& e) {
    EXPECT_EQ(e.cause(), RdmaCause::ToolFailed);
  }
}

TEST(RdmaPreflight, ReadyNodeAccepts) {
  auto h = ready_node();
  EXPECT_NO_THROW(rdma::check_destination(container(), h));
  EXPECT_EQ(h.actions.size(), 2u);  // looked at QPs and MRs
}

TEST(RdmaPreflight, ContainerWithoutVerbsChecksNothing) {
  test::FakeRdmaHost h;  // nothing loaded at all
  EXPECT_NO_THROW(rdma::check_destination(rdma::RdmaInventory{}, h));
}

TEST(RdmaPreflight, NoModuleOrStockModuleIsRefused) {
  test::FakeRdmaHost none;
  std::string what;
  EXPECT_EQ(cause_of(container(), none, &what), RdmaCause::NoPatchedModule);
  EXPECT_NE(what.find("no rdma_rxe loaded"), std::string::npos) << what;
  test::FakeRdmaHost stock;
  stock.loaded = true;  // no qpn_min parameter
  stock.ports["rxe0"] = "4: ACTIVE";
  EXPECT_EQ(cause_of(container(), stock, &what), RdmaCause::NoPatchedModule);
  EXPECT_NE(what.find("not crx's patched module"), std::string::npos) << what;
}

TEST(RdmaPreflight, NoActivePortIsRefused) {
  auto h = ready_node();
  h.ports["rxe0"] = "1: DOWN";
  std::string what;
  EXPECT_EQ(cause_of(container(), h, &what), RdmaCause::NoActiveDevice);
  EXPECT_EQ(what, "rdma: no RDMA device on the destination has an ACTIVE port (rxe0: 1: DOWN)");
  h.ports.clear();
  EXPECT_EQ(cause_of(container(), h, &what), RdmaCause::NoActiveDevice);
  h.ports["rxe0"] = "2: INIT";
  h.ports["rxe1"] = "4: ACTIVE";
  EXPECT_NO_THROW(rdma::check_destination(container(), h));
}

TEST(RdmaPreflight, NumbersInUseAreRefusedNamingThem) {
  auto h = ready_node();
  auto inv = container();
  inv.qpns = {4113, 4200};
  std::string what;
  EXPECT_EQ(cause_of(inv, h, &what), RdmaCause::QpnInUse);
  EXPECT_NE(what.find("QPN 4113 (rxe0)"), std::string::npos) << what;
  EXPECT_NE(what.find("qpn ranges overlap"), std::string::npos) << what;
  inv = container();
  inv.mrns = {4098};
  EXPECT_EQ(cause_of(inv, h, &what), RdmaCause::MrnInUse);
  EXPECT_NE(what.find("MR index 4098 (rxe0)"), std::string::npos) << what;
  // the core's resource id is not the MR index: no clash on "mrn" 3
  inv.mrns = {3};
  EXPECT_NO_THROW(rdma::check_destination(inv, h));
}

TEST(RdmaPreflight, UnreadableToolOutputIsAToolError) {
  auto h = ready_node();
  h.json["qp"] = "garbage";
  EXPECT_EQ(cause_of(container(), h), RdmaCause::ToolFailed);
}

}  // namespace
