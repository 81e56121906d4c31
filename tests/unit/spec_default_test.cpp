// `crx spec` output: what runc writes, and it parses back through parse_spec.
#include <unistd.h>

#include <linux/capability.h>

#include "spec/version.hpp"
#include "spec_test_util.hpp"

namespace {

using nlohmann::json;

bool has_namespace(const json& spec, const char* type) {
  for (const auto& ns : spec["linux"]["namespaces"])
    if (ns["type"] == type) return true;
  return false;
}

const json* find_mount(const json& spec, const char* destination) {
  for (const auto& m : spec["mounts"])
    if (m["destination"] == destination) return &m;
  return nullptr;
}

TEST(DefaultSpec, ParsesBack) {
  auto spec = crx::spec::parse_spec(crx::spec::default_spec(false));
  EXPECT_EQ(spec.oci_version, crx::spec::kOciVersion);
  EXPECT_EQ(spec.process.args, (std::vector<std::string>{"sh"}));
  EXPECT_TRUE(spec.process.terminal);
  EXPECT_TRUE(spec.process.no_new_privileges);
  EXPECT_TRUE(spec.root.readonly);
  EXPECT_EQ(spec.root.path, "rootfs");
  ASSERT_TRUE(spec.process.capabilities);
  EXPECT_EQ(spec.process.capabilities->bounding,
            (std::vector<int>{CAP_AUDIT_WRITE, CAP_KILL, CAP_NET_BIND_SERVICE}));
  EXPECT_EQ(spec.process.capabilities->ambient, spec.process.capabilities->bounding);
  EXPECT_TRUE(spec.process.capabilities->inheritable.empty());
  ASSERT_EQ(spec.process.rlimits.size(), 1u);
  EXPECT_EQ(spec.process.rlimits[0].type, "RLIMIT_NOFILE");
  EXPECT_EQ(spec.process.rlimits[0].soft, 1024u);
  EXPECT_EQ(spec.mounts.size(), 7u);
  EXPECT_EQ(spec.linux.masked_paths.size(), 10u);
  EXPECT_EQ(spec.linux.readonly_paths.size(), 5u);
  ASSERT_TRUE(spec.linux.resources);
  ASSERT_EQ(spec.linux.resources->devices.size(), 1u);
  EXPECT_FALSE(spec.linux.resources->devices[0].allow);
}

TEST(DefaultSpec, NamespacesAsRunc) {
  json spec = crx::spec::default_spec(false);
  for (const char* ns : {"pid", "network", "ipc", "uts", "mount", "cgroup"})
    EXPECT_TRUE(has_namespace(spec, ns)) << ns;
  EXPECT_FALSE(has_namespace(spec, "user"));
  EXPECT_FALSE(spec["linux"].contains("uidMappings"));
  EXPECT_EQ(*find_mount(spec, "/sys"),
            json::parse(R"({"destination": "/sys", "type": "sysfs", "source": "sysfs",
                            "options": ["nosuid", "noexec", "nodev", "ro"]})"));
  EXPECT_EQ((*find_mount(spec, "/dev/pts"))["options"].back(), "gid=5");
}

TEST(DefaultSpec, RootlessAsRuncToRootless) {
  json spec = crx::spec::default_spec(true);
  auto parsed = crx::spec::parse_spec(spec);
  EXPECT_TRUE(has_namespace(spec, "user"));
  EXPECT_FALSE(has_namespace(spec, "network"));
  EXPECT_TRUE(has_namespace(spec, "pid"));
  ASSERT_EQ(parsed.linux.uid_mappings.size(), 1u);
  EXPECT_EQ(parsed.linux.uid_mappings[0].container_id, 0u);
  EXPECT_EQ(parsed.linux.uid_mappings[0].host_id, ::geteuid());
  EXPECT_EQ(parsed.linux.uid_mappings[0].size, 1u);
  ASSERT_EQ(parsed.linux.gid_mappings.size(), 1u);
  EXPECT_EQ(parsed.linux.gid_mappings[0].host_id, ::getegid());
  EXPECT_FALSE(parsed.linux.resources);
  EXPECT_EQ(*find_mount(spec, "/sys"),
            json::parse(R"({"destination": "/sys", "type": "none", "source": "/sys",
                            "options": ["rbind", "nosuid", "noexec", "nodev", "ro"]})"));
  for (const auto& m : spec["mounts"])
    for (const auto& o : m.value("options", json::array()))
      EXPECT_NE(o.get<std::string>().substr(0, 4), "gid=") << m.dump();
  EXPECT_NE(find_mount(spec, "/sys/fs/cgroup"), nullptr);
}

}  // namespace
