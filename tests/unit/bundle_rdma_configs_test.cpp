// The RDMA example bundles (bundles/rdma-seq, bundles/perftest): their
// config.json must load through crx's own parser and validator and keep
// what makes verbs work in a container. Reads only the committed
// config.json files: no rootfs, no downloads, no root.
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <string>

#include "cgroup/bpf_devices.hpp"
#include "spec/spec.hpp"

namespace {

// CRX_SOURCE_DIR: the source tree, from CMake (not __FILE__, which
// -ffile-prefix-map, as dpkg's build flags set it, makes relative).
std::string bundle_dir(const std::string& name) {
  return (std::filesystem::path(CRX_SOURCE_DIR) / "bundles" / name).string();
}

class RdmaBundle : public ::testing::TestWithParam<const char*> {
 protected:
  crx::spec::Spec load() {
    std::string dir = bundle_dir(GetParam());
    // A crx::Error (the JSON path of what is wrong) fails the test by itself.
    return crx::spec::load_spec(dir);
  }
};

TEST_P(RdmaBundle, LoadsAndValidates) { EXPECT_NO_THROW(load()); }

TEST_P(RdmaBundle, ListsUverbs0AsACharDevice) {
  auto spec = load();
  const crx::spec::Device* uverbs = nullptr;
  for (const auto& d : spec.linux.devices)
    if (d.path == "/dev/infiniband/uverbs0") uverbs = &d;
  ASSERT_NE(uverbs, nullptr);
  EXPECT_EQ(uverbs->type, 'c');
  EXPECT_EQ(uverbs->major, 231);  // IB_UVERBS_MAJOR
  EXPECT_EQ(uverbs->minor, 192);  // IB_UVERBS_BASE_MINOR: the first device
}

// The allow rules are in the config itself (as containerd and docker write
// them), not only the ones crx derives from linux.devices.
TEST_P(RdmaBundle, DeviceRulesAllowUverbs0AndDenyTheRest) {
  auto spec = load();
  ASSERT_TRUE(spec.linux.resources.has_value());
  const auto& rules = spec.linux.resources->devices;
  using crx::cgroup::bpf::device_allowed;
  EXPECT_TRUE(device_allowed(rules, 'c', 231, 192, "rwm"));
  EXPECT_FALSE(device_allowed(rules, 'c', 231, 193, "rw"));  // a second device: an edit
  // rdma_cm is a misc device with a dynamic minor: an edit too (README).
  EXPECT_FALSE(device_allowed(rules, 'c', 10, 124, "rw"));
  EXPECT_FALSE(device_allowed(rules, 'b', 8, 0, "r"));
}

// rxe pins every MR against RLIMIT_MEMLOCK (Debian's default is 8 MiB).
// Large rather than RLIM_INFINITY: jq 1.6 (bookworm's), which the READMEs
// use to edit these files, rewrites 18446744073709551615 as a float that no
// parser accepts as an rlimit; integers up to 2^53 come through unchanged.
TEST_P(RdmaBundle, MemlockIsLargeAndSurvivesJq) {
  auto spec = load();
  bool found = false;
  for (const auto& r : spec.process.rlimits) {
    if (r.type != "RLIMIT_MEMLOCK") continue;
    found = true;
    EXPECT_EQ(r.resource, RLIMIT_MEMLOCK);
    EXPECT_EQ(r.soft, r.hard);
    EXPECT_GE(r.soft, uint64_t{1} << 40);
    EXPECT_LE(r.hard, uint64_t{1} << 53);
  }
  EXPECT_TRUE(found);
}

// Host network namespace by default (rxe in 6.1 lives in the initial one);
// the README shows how to join a private one by path instead.
TEST_P(RdmaBundle, HostNetworkNamespaceAndNoTerminal) {
  auto spec = load();
  EXPECT_EQ(spec.linux.find_namespace("network"), nullptr);
  EXPECT_NE(spec.linux.find_namespace("mount"), nullptr);
  EXPECT_NE(spec.linux.find_namespace("pid"), nullptr);
  EXPECT_FALSE(spec.process.terminal);
  EXPECT_EQ(spec.root.path, "rootfs");
  EXPECT_FALSE(spec.process.args.empty());
}

TEST_P(RdmaBundle, RecipeIsExecutable) {
  std::string recipe = bundle_dir(GetParam()) + "/make-rootfs.sh";
  EXPECT_EQ(::access(recipe.c_str(), X_OK), 0) << recipe;
}

INSTANTIATE_TEST_SUITE_P(Bundles, RdmaBundle, ::testing::Values("rdma-seq", "perftest"),
                         [](const auto& info) {
                           std::string n = info.param;
                           for (auto& c : n)
                             if (c == '-') c = '_';
                           return n;
                         });

}  // namespace
