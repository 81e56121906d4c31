#include <gtest/gtest.h>

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

}  // namespace
