// Which tmpfs mounts a dump may leave to the restore (recreated_mounts.hpp).
#include <gtest/gtest.h>
#include <sys/mount.h>

#include <set>

#include "checkpoint/recreated_mounts.hpp"
#include "spec/spec.hpp"

using namespace crx::checkpoint;

namespace {

crx::spec::Spec spec_with_mounts() {
  crx::spec::Spec s;
  s.linux.masked_paths = {"/proc/acpi", "/proc/kcore", "/sys/firmware/"};
  s.mounts.push_back({"/proc", "proc", "proc", {}});
  s.mounts.push_back({"/dev", "tmpfs", "tmpfs", {"nosuid", "strictatime", "mode=755", "size=65536k"}});
  s.mounts.push_back({"/dev/shm", "tmpfs", "shm", {"nosuid", "noexec", "nodev", "mode=1777", "size=65536k"}});
  s.mounts.push_back({"/data", "tmpfs", "/host/data", {"rbind", "rw"}});
  s.mounts.push_back({"/run", "tmpfs", "tmpfs", {"ro", "mode=755"}});
  return s;
}

// A mountinfo as a container with the spec above shows it.
const char* kMountinfo =
    "54 40 0:29 / / rw,relatime - tmpfs tmpfs rw\n"
    "55 54 0:23 / /proc rw,nosuid - proc proc rw\n"
    "56 54 0:30 / /dev rw,nosuid - tmpfs tmpfs rw,size=65536k,mode=755\n"
    "58 56 0:31 / /dev/shm rw,nosuid,nodev,noexec shared:5 - tmpfs shm rw,size=65536k\n"
    "46 55 0:28 / /proc/acpi ro,relatime - tmpfs tmpfs ro\n"
    "49 55 0:5 /null /proc/kcore rw - devtmpfs udev rw\n"
    "50 54 0:32 / /sys/firmware ro,relatime - tmpfs tmpfs ro\n"
    "60 54 0:33 / /run ro - tmpfs tmpfs ro\n"
    "61 54 0:34 / /with\\040space rw - tmpfs tmpfs rw\n";

std::set<std::string> keys(const std::vector<ExternalMount>& v) {
  std::set<std::string> out;
  for (const auto& m : v) {
    EXPECT_EQ(m.value, recreated_mount_name(m.key));
    out.insert(m.key);
  }
  return out;
}

}  // namespace

TEST(RecreatedMounts, CandidatesAreMaskedPathsAndTmpfsMountsButNotDevNorBinds) {
  auto c = recreatable_tmpfs(spec_with_mounts());
  std::set<std::string> dests;
  for (const auto& m : c) dests.insert(m.destination);
  EXPECT_EQ(dests, (std::set<std::string>{"/proc/acpi", "/proc/kcore", "/sys/firmware", "/dev/shm",
                                          "/run"}));
  for (const auto& m : c) {
    if (m.destination == "/proc/acpi") {
      EXPECT_EQ(m.flags, static_cast<unsigned long>(MS_RDONLY));
      EXPECT_EQ(m.data, "");
    }
    if (m.destination == "/dev/shm") {
      EXPECT_EQ(m.flags, static_cast<unsigned long>(MS_NOSUID | MS_NOEXEC | MS_NODEV));
      EXPECT_EQ(m.data, "mode=1777,size=65536k");
    }
    if (m.destination == "/run") {
      EXPECT_TRUE(m.flags & MS_RDONLY);
    }
  }
}

TEST(RecreatedMounts, ParsesMountPointsWithEscapesAndOptionalFields) {
  auto mp = parse_mount_points(kMountinfo);
  ASSERT_EQ(mp.size(), 9u);
  EXPECT_EQ(mp[3].path, "/dev/shm");
  EXPECT_EQ(mp[3].fstype, "tmpfs");
  EXPECT_EQ(mp[5].fstype, "devtmpfs");
  EXPECT_EQ(mp[8].path, "/with space");
  EXPECT_TRUE(parse_mount_points("garbage\n\n1 2 3\n").empty());
}

bool yes(const std::string&) { return true; }
bool no(const std::string&) { return false; }

TEST(RecreatedMounts, EmptyTmpfsMountsAreChosen) {
  auto chosen = choose_recreated_mounts(recreatable_tmpfs(spec_with_mounts()),
                                        parse_mount_points(kMountinfo), yes, no);
  // /proc/kcore is a /dev/null bind (not a tmpfs): not chosen.
  EXPECT_EQ(keys(chosen),
            (std::set<std::string>{"/proc/acpi", "/sys/firmware", "/dev/shm", "/run"}));
}

TEST(RecreatedMounts, AMountThatHoldsFilesIsLeftToCriuUnlessItsContentsAreCarried) {
  auto empty_but_shm = [](const std::string& p) { return p != "/dev/shm"; };
  auto chosen = choose_recreated_mounts(recreatable_tmpfs(spec_with_mounts()),
                                        parse_mount_points(kMountinfo), empty_but_shm, no);
  EXPECT_EQ(keys(chosen), (std::set<std::string>{"/proc/acpi", "/sys/firmware", "/run"}));
  std::set<std::string> carried;
  auto carry = [&](const std::string& p) {
    carried.insert(p);
    return true;
  };
  chosen = choose_recreated_mounts(recreatable_tmpfs(spec_with_mounts()),
                                   parse_mount_points(kMountinfo), empty_but_shm, carry);
  EXPECT_EQ(keys(chosen),
            (std::set<std::string>{"/proc/acpi", "/sys/firmware", "/dev/shm", "/run"}));
  EXPECT_EQ(carried, std::set<std::string>{"/dev/shm"}) << "only what is not empty is packed";
}

TEST(RecreatedMounts, AReadOnlyMountThatHoldsFilesIsNeverCarried) {
  // /run is mounted read-only by the spec; holding files, it must have been
  // remounted, and its staged copy could not be filled.
  std::set<std::string> carried;
  auto carry = [&](const std::string& p) {
    carried.insert(p);
    return true;
  };
  auto chosen = choose_recreated_mounts(recreatable_tmpfs(spec_with_mounts()),
                                        parse_mount_points(kMountinfo), no, carry);
  EXPECT_EQ(keys(chosen), std::set<std::string>{"/dev/shm"});
  EXPECT_EQ(carried, std::set<std::string>{"/dev/shm"});
}

TEST(RecreatedMounts, MissingOrStackedOrOtherMountsAreLeftToCriu) {
  std::string info = std::string(kMountinfo) +
                     "70 50 0:40 / /sys/firmware rw - tmpfs tmpfs rw\n"  // stacked on top
                     "71 54 0:41 / /run/x rw - tmpfs tmpfs rw\n";
  // /proc/acpi is gone, /dev/shm is some other file system.
  std::string edited;
  for (const auto& m : parse_mount_points(info)) {
    if (m.path == "/proc/acpi") continue;
    std::string type = m.path == "/dev/shm" ? "ramfs" : m.fstype;
    edited += "1 1 0:1 / " + (m.path == "/with space" ? std::string("/with\\040space") : m.path) +
              " rw - " + type + " x rw\n";
  }
  auto chosen = choose_recreated_mounts(recreatable_tmpfs(spec_with_mounts()),
                                        parse_mount_points(edited), yes, no);
  EXPECT_EQ(keys(chosen), (std::set<std::string>{"/run"}));
}
