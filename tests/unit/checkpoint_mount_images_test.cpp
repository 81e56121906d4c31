// mount_images.hpp: whether the dumped mount trees propagate, read from
// mountpoints-*.img as CRIU writes them (its magics, u32-length entries,
// and fields crx does not declare, which must be skipped).
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <string>

#include "checkpoint/mount_images.hpp"
#include "common/error.hpp"
#include "common/fs.hpp"
#include "criu-rpc/criu_mounts.pb-c.h"
#include "criu_stats_images.hpp"

namespace {

namespace ck = crx::checkpoint;
using crx::test::criu_u32;

std::string temp_dir() {
  char t[] = "/tmp/crx-mnt-XXXXXX";
  if (!mkdtemp(t)) throw std::runtime_error("mkdtemp");
  return t;
}

// One mount as CRIU 3.17 writes it: crx's fields plus some it does not
// declare (mnt_id 2, mountpoint 7, fstype 1, root 6, sb_flags 17), as raw
// protobuf.
std::string mount_entry(uint32_t id, const std::string& at, uint32_t shared, uint32_t master) {
  CrxMntEntry m = CRX_MNT_ENTRY__INIT;
  m.has_shared_id = shared != 0;
  m.shared_id = shared;
  m.has_master_id = master != 0;
  m.master_id = master;
  std::string body(crx_mnt_entry__get_packed_size(&m), '\0');
  crx_mnt_entry__pack(&m, reinterpret_cast<uint8_t*>(body.data()));
  body += std::string("\x10") + static_cast<char>(id) + "\x3a" + static_cast<char>(at.size()) + at;
  body += std::string("\x08\x05", 2) + "\x32\x01/" + std::string("\x88\x01\x0e", 3);
  return criu_u32(static_cast<uint32_t>(body.size())) + body;
}

std::string mount_image(const std::string& entries) {
  return criu_u32(0x54564319) + criu_u32(0x55563928) + entries;
}

struct MountImages : ::testing::Test {
  std::string dir = temp_dir();
  ~MountImages() override { std::filesystem::remove_all(dir); }
};

TEST_F(MountImages, PrivateMountsDoNotPropagate) {
  crx::write_file(dir + "/mountpoints-10.img",
                  mount_image(mount_entry(54, "/", 0, 0) + mount_entry(55, "/proc", 0, 0) +
                              mount_entry(56, "/dev", 0, 0)));
  crx::write_file(dir + "/pagemap-1.img", "not a mount image");  // not looked at
  EXPECT_FALSE(ck::mounts_propagate(dir));
}

TEST_F(MountImages, ImagesWithoutAMountNamespaceDoNotPropagate) {
  EXPECT_FALSE(ck::mounts_propagate(dir));
}

TEST_F(MountImages, ASharedOrSlaveMountInAnyNamespacePropagates) {
  crx::write_file(dir + "/mountpoints-10.img",
                  mount_image(mount_entry(54, "/", 0, 0) + mount_entry(60, "/shared", 3, 0)));
  EXPECT_TRUE(ck::mounts_propagate(dir));
  crx::write_file(dir + "/mountpoints-10.img", mount_image(mount_entry(54, "/", 0, 0)));
  crx::write_file(dir + "/mountpoints-12.img",
                  mount_image(mount_entry(70, "/", 0, 0) + mount_entry(71, "/slave", 0, 3)));
  EXPECT_TRUE(ck::mounts_propagate(dir));
}

TEST_F(MountImages, ABrokenImageIsNamedAndAMissingDirIsItsErrno) {
  std::string whole = mount_image(mount_entry(54, "/", 0, 0));
  crx::write_file(dir + "/mountpoints-10.img", whole.substr(0, whole.size() - 2));
  try {
    ck::mounts_propagate(dir);
    ADD_FAILURE() << "a truncated mount image was read";
  } catch (const crx::Error& e) {
    EXPECT_EQ(e.cause(), crx::Cause::Invalid);
    EXPECT_NE(std::string(e.what()).find(dir + "/mountpoints-10.img"), std::string::npos) << e.what();
  }
  crx::write_file(dir + "/mountpoints-10.img", mount_image(criu_u32(3) + "\xff\xff\xff"));
  EXPECT_THROW(ck::mounts_propagate(dir), crx::Error);
  try {
    ck::mounts_propagate(dir + "/none");
    ADD_FAILURE() << "a missing images dir was read";
  } catch (const crx::Error& e) {
    EXPECT_EQ(e.sys_errno(), ENOENT) << e.what();
  }
}

}  // namespace
