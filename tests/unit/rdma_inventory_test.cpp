// A container's verbs inventory from a dump (rxe_migr_abi.h format) and its
// trip through the migration manifest.
#include <gtest/gtest.h>
#include <infiniband/verbs.h>

#include <cstring>
#include <vector>

#include "common/error.hpp"
#include "migrate/protocol.hpp"
#include "rdma/rdma_error.hpp"
#include "rdma/rdma_inventory.hpp"
#include "rxe_migr_abi.h"

namespace {

using namespace crx;

// Builds a dump the way the patched rxe writes one.
class DumpBuilder {
 public:
  DumpBuilder() { bytes_.resize(sizeof(rxe_migr_dump_hdr)); }
  template <typename Body>
  void add(uint32_t type, uint32_t handle, const Body& body) {
    add_raw(type, handle, &body, sizeof body);
  }
  void add_raw(uint32_t type, uint32_t handle, const void* body, size_t len) {
    rxe_migr_rec_hdr h{};
    h.type = type;
    h.handle = handle;
    h.len = static_cast<uint32_t>((sizeof h + len + 7) / 8 * 8);
    size_t at = bytes_.size();
    bytes_.resize(at + h.len);
    std::memcpy(bytes_.data() + at, &h, sizeof h);
    if (len) std::memcpy(bytes_.data() + at + sizeof h, body, len);
    ++count_;
  }
  std::vector<unsigned char> finish() {
    rxe_migr_dump_hdr h{RXE_MIGR_MAGIC, RXE_MIGR_ABI_VERSION, count_,
                        static_cast<uint32_t>(bytes_.size())};
    std::memcpy(bytes_.data(), &h, sizeof h);
    return bytes_;
  }

 private:
  std::vector<unsigned char> bytes_;
  uint32_t count_ = 0;
};

std::vector<unsigned char> sample_dump(uint32_t qpn, uint32_t mrn, uint32_t qp_type = IBV_QPT_RC) {
  DumpBuilder b;
  rxe_migr_event_file ev{RXE_MIGR_EVF_DEFAULT_ASYNC, 0};
  b.add(RXE_MIGR_OBJ_ASYNC_EVENT, 77, ev);
  b.add_raw(RXE_MIGR_OBJ_PD, 1, nullptr, 0);
  rxe_migr_mr mr{};
  mr.mrn = mrn;
  mr.length = 1 << 20;
  b.add(RXE_MIGR_OBJ_MR, 2, mr);
  rxe_migr_cq cq{};
  cq.comp_channel = ~0u;
  b.add(RXE_MIGR_OBJ_CQ, 3, cq);
  rxe_migr_qp qp{};
  qp.qpn = qpn;
  qp.qp_type = qp_type;
  qp.srq_handle = ~0u;
  b.add(RXE_MIGR_OBJ_QP, 4, qp);
  return b.finish();
}

TEST(RdmaInventory, CountsObjectsNumbersAndPinnedMemory) {
  auto d1 = sample_dump(0x1011, 0x1002);
  auto d2 = sample_dump(0x1012, 0x1002);
  rdma::RdmaInventory inv;
  inv.add_dump("rxe0", d1.data(), d1.size());
  inv.add_dump("rxe0", d2.data(), d2.size());
  EXPECT_EQ(inv.contexts, 2u);
  EXPECT_EQ(inv.devices, std::vector<std::string>{"rxe0"});
  EXPECT_EQ(inv.qpns, (std::vector<uint32_t>{0x1011, 0x1012}));
  EXPECT_EQ(inv.mrns, std::vector<uint32_t>{0x1002});  // unique
  EXPECT_EQ(inv.counts.qp, 2u);
  EXPECT_EQ(inv.counts.mr, 2u);
  EXPECT_EQ(inv.counts.cq, 2u);
  EXPECT_EQ(inv.counts.pd, 2u);
  EXPECT_EQ(inv.counts.async_event, 2u);
  EXPECT_EQ(inv.mr_bytes, 2u << 20);
  EXPECT_EQ(rdma::describe(inv), "2 QPs, 2 MRs (2.0 MiB pinned), 2 CQs, 0 SRQs, 2 PDs on rxe0");
}

TEST(RdmaInventory, QpsOtherThanRcAndUdAreRefusedUpFront) {
  auto rc = sample_dump(0x1011, 0x1002);
  auto ud = sample_dump(0x1005, 0x1003, IBV_QPT_UD);
  auto uc = sample_dump(0x1006, 0x1004, IBV_QPT_UC);
  rdma::RdmaInventory inv;
  inv.add_dump("rxe0", rc.data(), rc.size());
  inv.add_dump("rxe0", ud.data(), ud.size());
  EXPECT_NO_THROW(rdma::refuse_unsupported("c1", inv));
  inv.add_dump("rxe0", uc.data(), uc.size());
  ASSERT_EQ(inv.unsupported, std::vector<std::string>{"UC QP 4102 (rxe0)"});
  try {
    rdma::refuse_unsupported("c1", inv);
    FAIL() << "not refused";
  } catch (const rdma::RdmaError& e) {
    EXPECT_EQ(e.cause(), rdma::RdmaCause::Unsupported);
    EXPECT_EQ(e.sys_errno(), EOPNOTSUPP);
    EXPECT_NE(std::string(e.what()).find("container c1 holds verbs objects"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("UC QP 4102 (rxe0)"), std::string::npos) << e.what();
  }
}

TEST(RdmaInventory, AddressHandlesAreCountedAndSurviveTheManifest) {
  DumpBuilder b;
  b.add_raw(RXE_MIGR_OBJ_PD, 1, nullptr, 0);
  rxe_migr_ah ah{};
  ah.ahn = 0x1001;
  b.add(RXE_MIGR_OBJ_AH, 2, ah);
  ah.ahn = 0x1002;
  b.add(RXE_MIGR_OBJ_AH, 3, ah);
  auto d = b.finish();
  rdma::RdmaInventory inv;
  inv.add_dump("rxe0", d.data(), d.size());
  EXPECT_EQ(inv.counts.ah, 2u);
  EXPECT_EQ(inv.counts.total(), 3u);
  EXPECT_EQ(rdma::describe(inv), "0 QPs, 0 MRs (0.0 MiB pinned), 0 CQs, 0 SRQs, 1 PD, 2 AHs on rxe0");
  EXPECT_EQ(rdma::inventory_from_json(rdma::to_json(inv)).counts, inv.counts);
}

TEST(RdmaInventory, MalformedDumpIsAnErrorWithErrno) {
  auto d = sample_dump(5, 6);
  d[0] ^= 0xff;  // magic
  rdma::RdmaInventory inv;
  try {
    inv.add_dump("rxe0", d.data(), d.size());
    FAIL();
  } catch (const rdma::RdmaError& e) {
    EXPECT_EQ(e.cause(), rdma::RdmaCause::VerbsCall);
    EXPECT_EQ(e.sys_errno(), EINVAL);
  }
}

TEST(RdmaInventory, ManifestRoundTrip) {
  auto d = sample_dump(0x1011, 0x1002);
  migrate::Manifest m;
  m.id = "c1";
  m.bundle = "/b";
  m.config_sha256 = "00";
  m.rdma.emplace();
  m.rdma->add_dump("rxe0", d.data(), d.size());
  migrate::Manifest back = migrate::parse_manifest(migrate::to_json(m));
  ASSERT_TRUE(back.rdma);
  EXPECT_EQ(*back.rdma, *m.rdma);

  m.rdma.reset();  // no verbs: no section
  std::string text = migrate::to_json(m);
  EXPECT_EQ(text.find("\"rdma\""), std::string::npos);
  EXPECT_FALSE(migrate::parse_manifest(text).rdma);
}

TEST(RdmaInventory, ManifestSectionErrorsNameTheField) {
  auto j = nlohmann::json::parse(
      R"({"protocol":1,"id":"c1","bundle":"/b","config_sha256":"00",
          "rdma":{"devices":["rxe0"],"qpns":[17],"mrns":"x","contexts":1,"mr_bytes":0,
                  "objects":{"pd":1,"mr":1,"cq":1,"srq":0,"qp":1}}})");
  try {
    migrate::parse_manifest(j.dump());
    FAIL();
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "malformed manifest: rdma.mrns has the wrong type");
  }
  j["rdma"]["mrns"] = {2};
  j["rdma"]["objects"].erase("qp");
  try {
    migrate::parse_manifest(j.dump());
    FAIL();
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "malformed manifest: no rdma.objects.qp");
  }
}

}  // namespace
