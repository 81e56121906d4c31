// The receiver's checks before it accepts (migrate/destination_checks.hpp).
#include <gtest/gtest.h>

#include <set>

#include "common/error.hpp"
#include "migrate/criu_sides.hpp"
#include "migrate/destination_checks.hpp"
#include "migrate/protocol.hpp"

namespace {

using namespace crx::migrate;

TEST(DestinationChecks, VersionNumbers) {
  EXPECT_EQ(version_numbers("3.17.1"), (std::vector<long>{3, 17, 1}));
  EXPECT_EQ(version_numbers("6.1.0-18-amd64"), (std::vector<long>{6, 1, 0, 18}));
  EXPECT_TRUE(version_numbers("").empty());
}

TEST(DestinationChecks, OlderCriuOrKernelIsRefusedInOneLine) {
  EXPECT_TRUE(version_older("3.16.1", "3.17.1"));
  EXPECT_TRUE(version_older("3.17", "3.17.1"));
  EXPECT_FALSE(version_older("3.17.1", "3.17.1"));
  EXPECT_FALSE(version_older("3.18", "3.17.1"));
  EXPECT_TRUE(version_older("5.10.0-28-amd64", "6.1.0-18-amd64"));
  EXPECT_FALSE(version_older("6.1.0-20-amd64", "6.1.0-18-amd64"));
  EXPECT_NO_THROW(check_not_older("CRIU", "3.17.1", "3.17.1"));
  EXPECT_NO_THROW(check_not_older("CRIU", "", "3.17.1"));  // unknown: the restore decides
  try {
    check_not_older("CRIU", "3.16.1", "3.17.1");
    FAIL() << "no refusal";
  } catch (const crx::Error& e) {
    EXPECT_STREQ(e.what(),
                 "the destination's CRIU 3.16.1 is older than the source's 3.17.1 that writes "
                 "the images");
  }
}

TEST(DestinationChecks, MissingBindSourcesAreNamed) {
  crx::spec::Spec s;
  s.mounts = {{"/proc", "proc", "proc", {}},
              {"/out", "bind", "/srv/out", {"rbind", "rw"}},
              {"/data", "none", "/srv/data", {"bind"}},
              {"/etc/hosts", "", "/etc/hosts", {"rbind", "ro"}}};
  std::set<std::string> here{"/srv/out", "/etc/hosts", "proc"};
  auto missing = missing_bind_sources(s, [&](const std::string& p) { return here.count(p) > 0; });
  EXPECT_EQ(missing, (std::vector<std::string>{
                         "bind mount /data: /srv/data does not exist on the destination"}));
}

TEST(DestinationChecks, MissingNamespacePathsAreNamed) {
  crx::spec::Spec s;
  s.linux.namespaces = {{"pid", "", 0}, {"network", "/var/run/netns/ctr", 0},
                        {"ipc", "/proc/1/ns/ipc", 0}};
  auto missing = missing_namespace_paths(s, [](const std::string& p) { return p == "/proc/1/ns/ipc"; });
  EXPECT_EQ(missing, (std::vector<std::string>{
                         "network namespace /var/run/netns/ctr does not exist on the destination"}));
}

TEST(DestinationChecks, MissingDevicesAreNamed) {
  crx::spec::Spec s;
  s.linux.devices = {{"/dev/fuse", 'c', 10, 229, {}, {}, {}},
                     {"/dev/infiniband/uverbs0", 'c', 231, 192, {}, {}, {}},
                     {"/dev/fifo", 'p', 0, 0, {}, {}, {}}};
  std::set<std::string> here{"/sys/dev/char/10:229"};
  auto missing = missing_devices(s, [&](const std::string& p) { return here.count(p) > 0; });
  EXPECT_EQ(missing, (std::vector<std::string>{
                         "device /dev/infiniband/uverbs0 (char 231:192) does not exist on the "
                         "destination"}));
}

TEST(DestinationChecks, ManifestConfigThatIsNotJsonIsRefusedAsInvalid) {
  // --send-rootfs to a host without the bundle: the receiver checks the
  // config.json that came in the manifest. Malformed, it is the sender's
  // input that is wrong, in one line, not a library's parse message.
  crx::container::GlobalOptions g;
  g.root = "/nonexistent-crx-root";
  CriuDestination dst(g);
  Manifest m;
  m.id = "c1";
  m.bundle = "/nonexistent-crx-bundle";
  m.send_rootfs = true;
  m.config_json = "{\"ociVersion\": ";
  try {
    dst.accept(m);
    FAIL() << "accepted";
  } catch (const crx::Error& e) {
    EXPECT_EQ(e.cause(), crx::Cause::Invalid) << e.what();
    EXPECT_STREQ(e.what(), "the manifest's config.json is not JSON");
  }
}

}  // namespace
