// Is the container's /dev what crx makes? (recreated_dev.hpp)
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "checkpoint/recreated_dev.hpp"
#include "common/fs.hpp"

using namespace crx::checkpoint;

namespace {

DevEntry entry(const std::string& path, mode_t mode, dev_t rdev = 0, std::string target = "") {
  DevEntry e;
  e.path = path;
  e.mode = mode;
  e.rdev = rdev;
  e.target = std::move(target);
  return e;
}

std::vector<DevEntry> made() {
  return {entry("", S_IFDIR | 0755),
          entry("fd", S_IFLNK | 0777, 0, "/proc/self/fd"),
          entry("null", S_IFCHR | 0666, makedev(1, 3)),
          entry("pts", S_IFDIR | 0755),
          entry("ptmx", S_IFLNK | 0777, 0, "pts/ptmx"),
          entry("shm", S_IFDIR | 0755)};
}

}  // namespace

TEST(RecreatedDev, TheSameTreeHasNoDifference) {
  EXPECT_EQ(dev_difference(made(), made()), "");
}

TEST(RecreatedDev, MountPointsMatchDirectoriesWhateverTheirMode) {
  auto actual = made();
  actual[3].mode = S_IFDIR | 0620;  // devpts' root, seen through the mount
  actual[3].mount_point = true;
  actual[5].mode = S_IFDIR | 01777;
  actual[5].mount_point = true;
  EXPECT_EQ(dev_difference(actual, made()), "");
  actual[2].mount_point = true;  // a bind mount over /dev/null
  EXPECT_NE(dev_difference(actual, made()), "");
  // A file bound over a file crx would make: left to CRIU too.
  auto bound = made();
  bound.push_back(entry("zz-bound", S_IFREG | 0644));
  auto expected = made();
  expected.push_back(entry("zz-bound", S_IFREG | 0644));
  bound.back().mount_point = true;
  EXPECT_NE(dev_difference(bound, expected), "");
}

TEST(RecreatedDev, AnythingAddedOrChangedIsADifference) {
  auto extra = made();
  extra.push_back(entry("zz-app-file", S_IFREG | 0644));
  EXPECT_NE(dev_difference(extra, made()).find("/dev/zz-app-file"), std::string::npos);

  auto missing = made();
  missing.erase(missing.begin() + 2);
  EXPECT_NE(dev_difference(missing, made()).find("missing: /dev/null"), std::string::npos);

  auto other_device = made();
  other_device[2].rdev = makedev(1, 5);
  EXPECT_NE(dev_difference(other_device, made()), "");

  auto chmodded = made();
  chmodded[2].mode = S_IFCHR | 0600;
  EXPECT_NE(dev_difference(chmodded, made()), "");

  auto chowned = made();
  chowned[2].uid = 1000;
  EXPECT_NE(dev_difference(chowned, made()), "");

  auto relinked = made();
  relinked[4].target = "/dev/pts/ptmx";
  EXPECT_NE(dev_difference(relinked, made()), "");

  auto written = made();
  written.push_back(entry("zz", S_IFREG | 0644));
  auto expected = made();
  expected.push_back(entry("zz", S_IFREG | 0644));
  EXPECT_EQ(dev_difference(written, expected), "");
  written.back().size = 3;
  EXPECT_NE(dev_difference(written, expected), "");
}

TEST(RecreatedDev, ListsATreeSortedWithLinksAndSizes) {
  char tmpl[] = "/tmp/crx-devtree-XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  std::string d = tmpl;
  crx::mkdir_p(d + "/net", 0755);
  crx::write_file(d + "/net/tun", "abc", 0600);
  ASSERT_EQ(::symlink("/proc/self/fd", (d + "/fd").c_str()), 0);
  int fd = ::open(d.c_str(), O_RDONLY | O_DIRECTORY);
  ASSERT_GE(fd, 0);
  auto t = list_dev_tree(fd);
  ::close(fd);
  crx::remove_tree(d);
  ASSERT_EQ(t.size(), 4u);
  EXPECT_EQ(t[0].path, "");
  EXPECT_EQ(t[1].path, "fd");
  EXPECT_EQ(t[1].target, "/proc/self/fd");
  EXPECT_EQ(t[2].path, "net");
  EXPECT_TRUE(S_ISDIR(t[2].mode));
  EXPECT_EQ(t[3].path, "net/tun");
  EXPECT_EQ(t[3].size, 3);
  EXPECT_EQ(t[3].mode & 07777, 0600u);
  for (const auto& e : t) EXPECT_FALSE(e.mount_point);
}

TEST(RecreatedDev, OnlyASpecTmpfsDevWithoutUserNamespace) {
  crx::spec::Spec s;
  EXPECT_FALSE(dev_tmpfs(s));
  s.mounts.push_back({"/dev", "tmpfs", "tmpfs", {"nosuid", "strictatime", "mode=755", "size=65536k"}});
  auto d = dev_tmpfs(s);
  ASSERT_TRUE(d);
  EXPECT_EQ(d->data, "mode=755,size=65536k");
  s.linux.namespaces.push_back({"user", "", 0});
  EXPECT_FALSE(dev_tmpfs(s));
}
