// Finding a process's uverbs fds and copying them, without RDMA: the same
// calls on ordinary files of this process, and a fake sysfs.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>

#include "common/fs.hpp"
#include "rdma/container_verbs.hpp"
#include "rdma/rdma_error.hpp"
#include "rdma/verbs_scan.hpp"

namespace {

using namespace crx;

struct TempDir {
  std::string path;
  TempDir() {
    char tmpl[] = "/tmp/crx-rdma-scan-XXXXXX";
    path = ::mkdtemp(tmpl);
  }
  ~TempDir() { remove_tree(path); }
};

TEST(RdmaScan, FindsAndCopiesFdsByLinkTarget) {
  TempDir t;
  write_file(t.path + "/uverbs7", "x");
  UniqueFd mine(::open((t.path + "/uverbs7").c_str(), O_RDONLY | O_CLOEXEC));
  ASSERT_TRUE(mine);
  auto fds = rdma::fds_linking_to(::getpid(), t.path + "/uverbs");
  ASSERT_EQ(fds.size(), 1u);
  EXPECT_EQ(fds[0], mine.get());
  UniqueFd pidfd = rdma::open_pidfd(::getpid());
  ASSERT_TRUE(pidfd);
  UniqueFd copy = rdma::copy_fd(pidfd.get(), ::getpid(), mine.get());
  ASSERT_TRUE(copy);
  struct stat a{}, b{};
  ASSERT_EQ(::fstat(mine.get(), &a), 0);
  ASSERT_EQ(::fstat(copy.get(), &b), 0);
  EXPECT_EQ(a.st_ino, b.st_ino);  // the same file, crx's own fd
  EXPECT_FALSE(rdma::copy_fd(pidfd.get(), ::getpid(), 1000000));  // not open: skipped
}

TEST(RdmaScan, GoneProcessHasNoFds) {
  EXPECT_TRUE(rdma::fds_linking_to(0x3fffffff, "/dev/infiniband/uverbs").empty());
  EXPECT_FALSE(rdma::open_pidfd(0x3fffffff));
  // Our own processes hold no verbs contexts: nothing found, nothing called.
  auto cv = rdma::ContainerVerbs::of_processes({::getpid(), 0x3fffffff});
  EXPECT_TRUE(cv.empty());
  EXPECT_TRUE(cv.inventory().empty());
  EXPECT_EQ(cv.resume_stopped(), 0);
}

TEST(RdmaScan, AnyHoldsVerbsAsksEveryProcessItIsGiven) {
  // A fake /proc: 10 holds a file and a socket, 20 a uverbs device; 30 is gone.
  TempDir t;
  for (const char* fd : {"/10/fd", "/20/fd"}) mkdir_p(t.path + fd);
  ASSERT_EQ(::symlink("/etc/hostname", (t.path + "/10/fd/3").c_str()), 0);
  ASSERT_EQ(::symlink("socket:[4242]", (t.path + "/10/fd/4").c_str()), 0);
  ASSERT_EQ(::symlink("/dev/infiniband/uverbs0", (t.path + "/20/fd/7").c_str()), 0);
  EXPECT_FALSE(rdma::any_holds_verbs({}, t.path));
  EXPECT_FALSE(rdma::any_holds_verbs({10, 30}, t.path));
  EXPECT_TRUE(rdma::any_holds_verbs({10, 30, 20}, t.path));
  EXPECT_TRUE(rdma::any_holds_verbs({20}, t.path));
}

TEST(RdmaScan, DeviceNameFromSysfs) {
  TempDir t;
  std::string cls = t.path + "/class/infiniband_verbs";
  mkdir_p(cls + "/uverbs0");
  mkdir_p(cls + "/uverbs1");
  write_file(cls + "/uverbs0/dev", "231:192\n");
  write_file(cls + "/uverbs0/ibdev", "mlx5_0\n");
  write_file(cls + "/uverbs1/dev", "231:193\n");
  write_file(cls + "/uverbs1/ibdev", "rxe0\n");
  EXPECT_EQ(rdma::uverbs_device_name(makedev(231, 193), t.path), "rxe0");
  try {
    rdma::uverbs_device_name(makedev(231, 200), t.path);
    FAIL();
  } catch (const rdma::RdmaError& e) {
    EXPECT_EQ(e.sys_errno(), ENODEV);
    EXPECT_NE(std::string(e.what()).find("231:200"), std::string::npos);
  }
}

}  // namespace
