// source_manifest: what `crx migrate` sends first, built from the
// container's bundle, its CRIU flags and this host's versions.
#include <gtest/gtest.h>

#include <string>

#include "common/error.hpp"
#include "common/fs.hpp"
#include "migrate/manifest.hpp"
#include "../support/temp_dir.hpp"

namespace {

using crx::migrate::source_manifest;

class SourceManifest : public ::testing::Test {
 protected:
  crx::test::TempDir tmp{"crx-manifest"};
  std::string dir = tmp.path();
  crx::migrate::HostVersions host{"6.1.0-test", "3.17.1"};
};

TEST_F(SourceManifest, CarriesTheBundleFlagsAndHost) {
  const std::string config = R"({"ociVersion": "1.1.0"})";
  crx::write_file(dir + "/config.json", config);
  crx::checkpoint::CriuFlags f;
  f.tcp_established = true;
  f.file_locks = true;
  f.lazy_pages = true;  // not the destination's business
  f.manage_cgroups_mode = crx::checkpoint::CgroupMode::Full;
  auto m = source_manifest("c1", dir, f, true, host);
  EXPECT_EQ(m.id, "c1");
  EXPECT_EQ(m.bundle, dir);
  EXPECT_EQ(m.config_json, config);
  EXPECT_EQ(m.config_sha256, crx::migrate::bundle_config_hash(dir));
  EXPECT_EQ(m.config_sha256.size(), 64u);
  EXPECT_TRUE(m.send_rootfs);
  EXPECT_TRUE(m.flags.tcp_established);
  EXPECT_FALSE(m.flags.ext_unix_sk);
  EXPECT_FALSE(m.flags.shell_job);
  EXPECT_TRUE(m.flags.file_locks);
  EXPECT_EQ(m.flags.manage_cgroups_mode, "full");
  EXPECT_EQ(m.kernel, "6.1.0-test");
  EXPECT_EQ(m.criu_version, "3.17.1");
  EXPECT_FALSE(m.rdma);
  EXPECT_FALSE(m.inventory);
  // what the receiver reads back
  auto back = crx::migrate::parse_manifest(crx::migrate::to_json(m));
  EXPECT_EQ(back.config_sha256, m.config_sha256);
  EXPECT_EQ(back.flags.manage_cgroups_mode, "full");
}

TEST_F(SourceManifest, NoCgroupModeLeavesCriusDefault) {
  crx::write_file(dir + "/config.json", "{}");
  auto m = source_manifest("c1", dir, {}, false, host);
  EXPECT_EQ(m.flags.manage_cgroups_mode, "");
  EXPECT_FALSE(m.send_rootfs);
}

TEST_F(SourceManifest, MissingConfigIsNotFound) {
  try {
    source_manifest("c1", dir, {}, false, host);
    FAIL() << "no error";
  } catch (const crx::Error& e) {
    EXPECT_EQ(e.cause(), crx::Cause::NotFound) << e.what();
    EXPECT_NE(std::string(e.what()).find(dir + "/config.json"), std::string::npos) << e.what();
  }
}

}  // namespace
