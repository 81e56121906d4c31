#include <gtest/gtest.h>

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

}  // namespace
