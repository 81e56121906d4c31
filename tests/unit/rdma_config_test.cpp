// The rdma: section of /etc/crx/config.yaml: values, defaults, and errors
// that name the file and the key.
#include <gtest/gtest.h>

#include "rdma/rdma_config.hpp"
#include "rdma/rdma_error.hpp"

namespace {

using namespace crx::rdma;

RdmaError parse_error(const std::string& yaml) {
  try {
    parse_rdma_config(yaml, "/etc/crx/config.yaml");
  } catch (const RdmaError& e) {
    return e;
  }
  ADD_FAILURE() << "no error for: " << yaml;
  return RdmaError(RdmaCause::System, "none");
}

TEST(RdmaConfig, ReadsRangesInHexAndDecimal) {
  auto c = parse_rdma_config(
      "migration:\n  listen: 0.0.0.0:7070\n"
      "rdma:\n  device: rxe1\n  netdev: eth0\n  qpn_min: 0x1000\n  qpn_max: 0x1fff\n"
      "  mrn_min: 4096\n  mrn_max: 8191\n  ahn_min: 0x1000\n  ahn_max: 0x1fff\n",
      "f");
  EXPECT_EQ(c.device, "rxe1");
  EXPECT_EQ(c.netdev, "eth0");
  EXPECT_EQ(c.qpn_min, 0x1000u);
  EXPECT_EQ(c.qpn_max, 0x1fffu);
  EXPECT_EQ(c.mrn_min, 4096u);
  EXPECT_EQ(c.mrn_max, 8191u);
  EXPECT_EQ(c.ahn_min, 4096u);
  EXPECT_EQ(c.ahn_max, 8191u);
}

TEST(RdmaConfig, DefaultsWithoutSectionOrFile) {
  EXPECT_EQ(parse_rdma_config("migration:\n  timeout_seconds: 5\n", "f"), RdmaConfig{});
  EXPECT_EQ(parse_rdma_config("", "f").device, "rxe0");
  EXPECT_EQ(load_rdma_config("/nonexistent/crx.yaml").device, "rxe0");
  try {
    load_rdma_config("/nonexistent/crx.yaml", true);
    FAIL();
  } catch (const RdmaError& e) {
    EXPECT_EQ(e.cause(), RdmaCause::BadConfig);
    EXPECT_EQ(e.sys_errno(), ENOENT);
    EXPECT_NE(std::string(e.what()).find("/nonexistent/crx.yaml"), std::string::npos);
  }
}

TEST(RdmaConfig, ErrorsNameFileAndKey) {
  struct Case {
    const char* yaml;
    const char* expect;
  } cases[] = {
      {"rdma:\n  qpn_mn: 1\n", "/etc/crx/config.yaml: unknown key rdma.qpn_mn"},
      {"rdma:\n  qpn_min: lots\n", "/etc/crx/config.yaml: rdma.qpn_min must be an integer"},
      {"rdma:\n  mrn_max: 0x1000000\n", "/etc/crx/config.yaml: rdma.mrn_max must be 0..0xffffff"},
      {"rdma:\n  qpn_min: -1\n", "rdma.qpn_min must be 0..0xffffff"},
      {"rdma:\n  qpn_min: 9\n  qpn_max: 8\n", "rdma.qpn_min is above rdma.qpn_max"},
      {"rdma:\n  mrn_min: 9\n  mrn_max: 8\n", "rdma.mrn_min is above rdma.mrn_max"},
      {"rdma:\n  ahn_max: 0x8000\n", "rdma.ahn_max must be 0..0x7fff"},
      {"rdma:\n  ahn_min: 9\n  ahn_max: 8\n", "rdma.ahn_min is above rdma.ahn_max"},
      {"rdma:\n  netdev: [a, b]\n", "rdma.netdev must be a name"},
      {"rdma:\n  device: a/b\n", "rdma.device \"a/b\" is not a device name"},
      {"rdma: 3\n", "rdma must be a mapping"},
      {"rdma: [\n", "/etc/crx/config.yaml: invalid YAML"},
  };
  for (const auto& c : cases) {
    RdmaError e = parse_error(c.yaml);
    EXPECT_EQ(e.cause(), RdmaCause::BadConfig) << c.yaml;
    EXPECT_NE(std::string(e.what()).find(c.expect), std::string::npos) << e.what();
  }
}

}  // namespace
