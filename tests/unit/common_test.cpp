#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <string>

#include "common/error.hpp"
#include "common/fs.hpp"

namespace {

std::string temp_dir() {
  char tmpl[] = "/tmp/crx-unit-XXXXXX";
  const char* d = ::mkdtemp(tmpl);
  EXPECT_NE(d, nullptr);
  return d;
}

TEST(Fs, AtomicWriteReplacesContentAndLeavesNoTempFile) {
  auto dir = temp_dir();
  crx::write_file_atomic(dir + "/state.json", "one");
  crx::write_file_atomic(dir + "/state.json", "two");
  EXPECT_EQ(crx::read_file(dir + "/state.json"), "two");
  crx::remove_tree(dir + "/state.json");
  // only the target existed: removing it leaves an empty directory
  EXPECT_NO_THROW(crx::remove_tree(dir));
  EXPECT_FALSE(crx::path_exists(dir));
}

TEST(Fs, ReadMissingFileNamesThePath) {
  try {
    crx::read_file("/nonexistent/crx-file");
    FAIL() << "expected an error";
  } catch (const crx::Error& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/crx-file"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("No such file"), std::string::npos);
  }
}

TEST(Error, CauseFollowsTheErrno) {
  EXPECT_EQ(crx::Error("x", ENOENT).cause(), crx::Cause::NotFound);
  EXPECT_EQ(crx::Error("x", ESRCH).cause(), crx::Cause::NotFound);
  EXPECT_EQ(crx::Error("x", EEXIST).cause(), crx::Cause::Exists);
  EXPECT_EQ(crx::Error("x", EBUSY).cause(), crx::Cause::Busy);
  EXPECT_EQ(crx::Error("x", EINVAL).cause(), crx::Cause::Invalid);
  EXPECT_EQ(crx::Error("x", EACCES).cause(), crx::Cause::Permission);
  EXPECT_EQ(crx::Error("x", EPERM).cause(), crx::Cause::Permission);
  EXPECT_EQ(crx::Error("x", EIO).cause(), crx::Cause::IO);
  EXPECT_EQ(crx::Error("x", ENOSYS).cause(), crx::Cause::Unsupported);
  EXPECT_EQ(crx::Error("x", ETIMEDOUT).cause(), crx::Cause::TimedOut);
  EXPECT_EQ(crx::Error("x", EDOM).cause(), crx::Cause::Other);
  EXPECT_EQ(crx::Error("x").cause(), crx::Cause::Other);
  EXPECT_EQ(crx::Error("x").sys_errno(), 0);
}

TEST(Error, ExplicitCauseKeepsTheErrnoAndTheText) {
  crx::Error e("refused", crx::Cause::Permission);
  EXPECT_EQ(e.cause(), crx::Cause::Permission);
  EXPECT_EQ(e.sys_errno(), 0);
  EXPECT_STREQ(e.what(), "refused");
  crx::Error f("gone", crx::Cause::NotFound, ESRCH);
  EXPECT_EQ(f.sys_errno(), ESRCH);
  EXPECT_STREQ(crx::cause_name(f.cause()), "not found");
}

TEST(Error, ThrowErrnoKeepsTheTextAndTheCause) {
  try {
    crx::throw_errno("open /x", ENOENT);
    FAIL() << "expected an error";
  } catch (const crx::Error& e) {
    EXPECT_STREQ(e.what(), "open /x: No such file or directory");
    EXPECT_EQ(e.sys_errno(), ENOENT);
    EXPECT_EQ(e.cause(), crx::Cause::NotFound);
  }
}

TEST(Fs, ReadMissingFileIsNotFound) {
  try {
    crx::read_file("/nonexistent/crx-file");
    FAIL() << "expected an error";
  } catch (const crx::Error& e) {
    EXPECT_EQ(e.cause(), crx::Cause::NotFound);
  }
}

TEST(Fs, MkdirPGivesEveryDirectoryItMakesTheModeWhateverTheUmask) {
  auto dir = temp_dir();
  mode_t old = ::umask(077);
  crx::mkdir_p(dir + "/a/b/c/", 0755);
  ::umask(old);
  for (const char* sub : {"/a", "/a/b", "/a/b/c"}) {
    struct stat st {};
    ASSERT_EQ(::stat((dir + sub).c_str(), &st), 0) << sub;
    EXPECT_EQ(st.st_mode & 07777, 0755u) << sub;
  }
  // One that is there keeps its mode.
  ASSERT_EQ(::chmod((dir + "/a/b").c_str(), 0711), 0);
  crx::mkdir_p(dir + "/a/b", 0700);
  struct stat st {};
  ASSERT_EQ(::stat((dir + "/a/b").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0711u);
  crx::remove_tree(dir);
}

TEST(Fs, MkdirPThroughAFileIsNotADirectory) {
  auto dir = temp_dir();
  crx::write_file(dir + "/f", "x");
  for (const std::string& bad : {dir + "/f", dir + "/f/sub"}) {
    try {
      crx::mkdir_p(bad, 0700);
      FAIL() << "expected an error for " << bad;
    } catch (const crx::Error& e) {
      EXPECT_EQ(e.sys_errno(), ENOTDIR) << e.what();
      EXPECT_EQ(e.cause(), crx::Cause::Invalid);
      EXPECT_NE(std::string(e.what()).find(dir + "/f"), std::string::npos) << e.what();
    }
  }
  crx::remove_tree(dir);
}

TEST(Fs, RemoveTreeTakesEverythingButWhatASymlinkPointsTo) {
  auto dir = temp_dir();
  auto outside = temp_dir();
  crx::write_file(outside + "/keep", "x");
  crx::mkdir_p(dir + "/a/b", 0700);
  crx::write_file(dir + "/a/b/file", "x");
  crx::write_file(dir + "/top", "x");
  ASSERT_EQ(::symlink(outside.c_str(), (dir + "/a/link").c_str()), 0);
  crx::remove_tree(dir);
  EXPECT_FALSE(crx::path_exists(dir));
  EXPECT_TRUE(crx::path_exists(outside + "/keep"));
  // Gone already, and a plain file: both fine.
  EXPECT_NO_THROW(crx::remove_tree(dir));
  EXPECT_NO_THROW(crx::remove_tree(outside + "/keep"));
  EXPECT_FALSE(crx::path_exists(outside + "/keep"));
  crx::remove_tree(outside);
}

}  // namespace
