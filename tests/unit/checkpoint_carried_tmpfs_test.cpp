// A tmpfs's contents packed by crx instead of CRIU's tar
// (checkpoint/carried_tmpfs.hpp): what comes back, what is left out, what
// is refused.
#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include <set>
#include <string>

#include "checkpoint/carried_tmpfs.hpp"
#include "common/error.hpp"
#include "common/fs.hpp"
#include "../support/temp_dir.hpp"

namespace {

using crx::checkpoint::carried_tmpfs_file;
using crx::checkpoint::pack_tmpfs;
using crx::checkpoint::unpack_tmpfs;

struct stat stat_of(const std::string& p) {
  struct stat st{};
  EXPECT_EQ(::lstat(p.c_str(), &st), 0) << p << ": " << std::strerror(errno);
  return st;
}

std::set<std::string> names_in(const std::string& dir) {
  std::set<std::string> out;
  DIR* d = ::opendir(dir.c_str());
  if (!d) return out;
  while (struct dirent* e = ::readdir(d))
    if (std::string(e->d_name) != "." && std::string(e->d_name) != "..") out.insert(e->d_name);
  ::closedir(d);
  return out;
}

void set_mtime(const std::string& p, time_t t) {
  struct timeval tv[2] = {{t, 0}, {t, 0}};
  ASSERT_EQ(::lutimes(p.c_str(), tv), 0) << p;
}

class CarriedTmpfs : public ::testing::Test {
 protected:
  crx::test::TempDir tmp{"crx-carried-tmpfs"};
  std::string src = tmp.path() + "/src", images = tmp.path() + "/images",
              dst = tmp.path() + "/dst";
  void SetUp() override {
    for (const auto& d : {src, images, dst}) ASSERT_EQ(::mkdir(d.c_str(), 0755), 0) << d;
  }
  std::string archive() const { return images + "/" + carried_tmpfs_file("/tmp"); }
};

TEST(CarriedTmpfsName, EncodesTheMountPointInOneFileName) {
  EXPECT_EQ(carried_tmpfs_file("/tmp"), "crx-tmpfs-%2Ftmp.tar");
  EXPECT_EQ(carried_tmpfs_file("/dev/shm"), "crx-tmpfs-%2Fdev%2Fshm.tar");
  EXPECT_EQ(carried_tmpfs_file("/a%2Fb"), "crx-tmpfs-%2Fa%252Fb.tar") << "no two paths share a name";
}

TEST_F(CarriedTmpfs, TheTreeComesBackWithModesTimesLinksAndHoles) {
  ASSERT_EQ(::chmod(src.c_str(), 01777), 0);
  crx::write_file(src + "/a", "hello", 0640);
  ASSERT_EQ(::mkdir((src + "/d").c_str(), 0711), 0);
  crx::write_file(src + "/d/b", "inner", 0600);
  ASSERT_EQ(::symlink("a", (src + "/l").c_str()), 0);
  ASSERT_EQ(::symlink("/nowhere/at/all", (src + "/dangling").c_str()), 0);
  ASSERT_EQ(::mkfifo((src + "/fifo").c_str(), 0600), 0);
  ASSERT_EQ(::chmod((src + "/fifo").c_str(), 0620), 0);  // past the umask
  // 4 MiB with one written page in the middle: a hole on either side.
  int fd = ::open((src + "/sparse").c_str(), O_CREAT | O_WRONLY, 0644);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::ftruncate(fd, 4 << 20), 0);
  ASSERT_EQ(::pwrite(fd, "x", 1, 2 << 20), 1);
  ::close(fd);
  for (const char* n : {"/a", "/d/b", "/l", "/dangling", "/fifo", "/sparse", "/d"})
    set_mtime(src + n, 1000000000);

  // Named as crx names it: the container's dir opened inside its root.
  int dir = ::open(src.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  ASSERT_GE(dir, 0);
  auto why = pack_tmpfs("/proc/self/fd/" + std::to_string(dir), images, carried_tmpfs_file("/tmp"));
  ::close(dir);
  ASSERT_FALSE(why) << *why;
  EXPECT_EQ(names_in(images), std::set<std::string>{carried_tmpfs_file("/tmp")});
  unpack_tmpfs(archive(), dst);

  EXPECT_EQ(names_in(dst), (std::set<std::string>{"a", "d", "l", "dangling", "fifo", "sparse"}));
  EXPECT_EQ(stat_of(dst).st_mode & 07777, 01777u) << "the root entry sets the dir's own mode";
  EXPECT_EQ(crx::read_file(dst + "/a"), "hello");
  EXPECT_EQ(stat_of(dst + "/a").st_mode & 07777, 0640u);
  EXPECT_EQ(stat_of(dst + "/a").st_mtime, 1000000000);
  EXPECT_EQ(stat_of(dst + "/d").st_mode & 07777, 0711u);
  EXPECT_EQ(stat_of(dst + "/d").st_mtime, 1000000000) << "a directory's time survives its contents";
  EXPECT_EQ(crx::read_file(dst + "/d/b"), "inner");
  char target[64] = {};
  ASSERT_GT(::readlink((dst + "/l").c_str(), target, sizeof target - 1), 0);
  EXPECT_STREQ(target, "a");
  ASSERT_GT(::readlink((dst + "/dangling").c_str(), target, sizeof target - 1), 0);
  EXPECT_STREQ(target, "/nowhere/at/all");
  EXPECT_TRUE(S_ISFIFO(stat_of(dst + "/fifo").st_mode));
  EXPECT_EQ(stat_of(dst + "/fifo").st_mode & 07777, 0620u);
  struct stat sp = stat_of(dst + "/sparse");
  EXPECT_EQ(sp.st_size, 4 << 20);
  std::string data = crx::read_file(dst + "/sparse");
  EXPECT_EQ(data[2 << 20], 'x');
  EXPECT_EQ(data.find_first_not_of('\0'), size_t{2 << 20});
  if (stat_of(src + "/sparse").st_blocks * 512 < (1 << 20)) {  // the source has holes here
    EXPECT_LT(sp.st_blocks * 512, 1 << 20) << "the holes stay holes";
  }
}

TEST_F(CarriedTmpfs, WrittenZerosTravelAsHoles) {
  // As PMIx's shared segments in a rank's /tmp: pages of zeros a program
  // wrote (a tmpfs keeps them as data), a little data, more zeros.
  std::string content(3 << 20, '\0');
  content.replace(1 << 20, 5, "hello");
  content.replace((1 << 20) + 8192, 3, "end");
  crx::write_file(src + "/seg", content, 0600);
  crx::write_file(src + "/zeros", std::string(1 << 20, '\0'), 0600);
  ASSERT_FALSE(pack_tmpfs(src, images, carried_tmpfs_file("/tmp")));
  EXPECT_LT(stat_of(archive()).st_size, 64 * 1024) << "4 MiB of zeros were packed as data";
  unpack_tmpfs(archive(), dst);
  EXPECT_EQ(crx::read_file(dst + "/seg"), content);
  EXPECT_EQ(crx::read_file(dst + "/zeros"), std::string(1 << 20, '\0'));
  EXPECT_EQ(stat_of(dst + "/zeros").st_size, 1 << 20);
  EXPECT_LT(stat_of(dst + "/seg").st_blocks * 512, 1 << 20) << "restored as holes";
}

TEST_F(CarriedTmpfs, ASocketIsLeftOutAsTarLeavesIt) {
  crx::write_file(src + "/kept", "k", 0600);
  int s = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ASSERT_GE(s, 0);
  struct sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::string path = src + "/sock";
  std::strncpy(a.sun_path, path.c_str(), sizeof a.sun_path - 1);
  ASSERT_EQ(::bind(s, reinterpret_cast<struct sockaddr*>(&a), sizeof a), 0);
  ASSERT_FALSE(pack_tmpfs(src, images, carried_tmpfs_file("/tmp")));
  ::close(s);
  unpack_tmpfs(archive(), dst);
  EXPECT_EQ(names_in(dst), std::set<std::string>{"kept"});
}

TEST_F(CarriedTmpfs, AHardLinkLeavesTheTmpfsToCriuAndNoFileBehind) {
  crx::write_file(src + "/a", std::string(200000, 'a'), 0600);
  ASSERT_EQ(::link((src + "/a").c_str(), (src + "/b").c_str()), 0);
  auto why = pack_tmpfs(src, images, carried_tmpfs_file("/tmp"));
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("2 hard links"), std::string::npos) << *why;
  EXPECT_EQ(names_in(images), std::set<std::string>{}) << "not even a partial archive";
}

TEST_F(CarriedTmpfs, AMissingTreeIsAnErrorWithItsCause) {
  try {
    pack_tmpfs(src + "/nosuch", images, carried_tmpfs_file("/tmp"));
    FAIL() << "packed a missing dir";
  } catch (const crx::Error& e) {
    EXPECT_EQ(e.cause(), crx::Cause::NotFound) << e.what();
    EXPECT_NE(std::string(e.what()).find("/nosuch"), std::string::npos) << e.what();
  }
  EXPECT_EQ(names_in(images), std::set<std::string>{});
}

// An archive with one entry named `name`, written by hand.
void write_archive(const std::string& path, const std::string& name) {
  struct archive* a = archive_write_new();
  archive_write_set_format_pax_restricted(a);
  ASSERT_EQ(archive_write_open_filename(a, path.c_str()), ARCHIVE_OK);
  struct archive_entry* e = archive_entry_new();
  archive_entry_set_pathname(e, name.c_str());
  archive_entry_set_filetype(e, AE_IFREG);
  archive_entry_set_perm(e, 0644);
  archive_entry_set_size(e, 4);
  ASSERT_EQ(archive_write_header(a, e), ARCHIVE_OK);
  ASSERT_EQ(archive_write_data(a, "evil", 4), 4);
  archive_entry_free(e);
  archive_write_close(a);
  archive_write_free(a);
}

TEST_F(CarriedTmpfs, NamesOutsideTheTmpfsAreRefused) {
  for (const char* name : {"../escaped", "./d/../../escaped", "/escaped"}) {
    SCOPED_TRACE(name);
    write_archive(archive(), name);
    try {
      unpack_tmpfs(archive(), dst);
      FAIL() << "unpacked " << name;
    } catch (const crx::Error& e) {
      EXPECT_EQ(e.cause(), crx::Cause::Invalid) << e.what();
      EXPECT_NE(std::string(e.what()).find(name), std::string::npos) << e.what();
    }
    EXPECT_FALSE(crx::path_exists(tmp.path() + "/escaped"));
    EXPECT_FALSE(crx::path_exists("/escaped"));
  }
}

TEST_F(CarriedTmpfs, NothingIsWrittenThroughASymlinkInTheTarget) {
  // A tmpfs whose "d" is a symlink out, then an archive entry "d/x": the
  // entry must not land where the link points.
  ASSERT_EQ(::mkdir((tmp.path() + "/outside").c_str(), 0755), 0);
  ASSERT_EQ(::symlink((tmp.path() + "/outside").c_str(), (dst + "/d").c_str()), 0);
  write_archive(archive(), "d/x");
  EXPECT_THROW(unpack_tmpfs(archive(), dst), crx::Error);
  EXPECT_EQ(names_in(tmp.path() + "/outside"), std::set<std::string>{});
}

TEST_F(CarriedTmpfs, ACorruptArchiveIsAnError) {
  crx::write_file(archive(), std::string(1024, 'z'), 0600);
  EXPECT_THROW(unpack_tmpfs(archive(), dst), crx::Error);
}

}  // namespace
