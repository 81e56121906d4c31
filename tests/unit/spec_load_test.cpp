// load_spec reads <bundle>/config.json; resolve_rootfs finds the rootfs;
// load_bundle, what create and restore use, does both for a bundle dir.
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <filesystem>

#include "common/fs.hpp"
#include "spec/bundle.hpp"
#include "spec_test_util.hpp"
#include "../support/temp_dir.hpp"

namespace {

class Bundle : public ::testing::Test {
 protected:
  void write_config(const std::string& text) { crx::write_file(dir + "/config.json", text); }
  std::string load_error() {
    try {
      crx::spec::load_spec(dir);
    } catch (const crx::Error& e) {
      return e.what();
    }
    return "";
  }
  crx::test::TempDir tmp{"crx-spec"};
  std::string dir = tmp.path();
};

TEST_F(Bundle, LoadsAndKeepsTheDocument) {
  write_config(spec_test::minimal_config().dump(2));
  auto spec = crx::spec::load_spec(dir);
  EXPECT_EQ(spec.process.args, (std::vector<std::string>{"sh"}));
  EXPECT_EQ(spec.raw, spec_test::minimal_config());
}

TEST_F(Bundle, MalformedJsonNamesLineAndColumn) {
  write_config("{\n  \"ociVersion\": \"1.1.0\",\n  \"root\": {\"path\": \"rootfs\",}\n}\n");
  std::string msg = load_error();
  EXPECT_EQ(msg.rfind("config.json: parse error at line 3 column 29: ", 0), 0u) << msg;
  EXPECT_EQ(msg.find('\n'), std::string::npos) << msg;
}

TEST_F(Bundle, EmptyFileIsAParseError) {
  write_config("");
  EXPECT_EQ(load_error().rfind("config.json: parse error at line 1 column 1: ", 0), 0u)
      << load_error();
}

// Found by tests/fuzz (fuzz_spec): a number beyond a double's range is
// nlohmann's out_of_range, not a parse_error, and escaped load_spec.
TEST_F(Bundle, NumberOutOfRangeIsAClearError) {
  write_config("{\"ociVersion\": 7e777777}");
  EXPECT_EQ(load_error().rfind("config.json: number overflow parsing '7e777777'", 0), 0u)
      << load_error();
}

TEST_F(Bundle, ValidationErrorsNameConfigJson) {
  auto doc = spec_test::minimal_config();
  doc["process"]["capabilities"]["bounding"] = {"CAP_FOO"};
  write_config(doc.dump());
  EXPECT_EQ(load_error(),
            "config.json: .process.capabilities.bounding[0]: unknown capability \"CAP_FOO\"");
}

TEST_F(Bundle, MissingConfigNamesThePath) {
  std::string msg = load_error();
  EXPECT_NE(msg.find(dir + "/config.json"), std::string::npos) << msg;
  EXPECT_NE(msg.find("No such file"), std::string::npos) << msg;
}

TEST_F(Bundle, RootfsRelativeToBundle) {
  std::filesystem::create_directory(dir + "/rootfs");
  auto spec = crx::spec::parse_spec(spec_test::minimal_config());
  EXPECT_EQ(crx::spec::resolve_rootfs(spec, dir), dir + "/rootfs");
  spec.root.path = dir + "/rootfs/";
  EXPECT_EQ(crx::spec::resolve_rootfs(spec, "/nonexistent"), dir + "/rootfs");
}

TEST_F(Bundle, MissingRootfsIsOneClearLine) {
  auto spec = crx::spec::parse_spec(spec_test::minimal_config());
  try {
    crx::spec::resolve_rootfs(spec, dir);
    FAIL() << "no error";
  } catch (const crx::Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "config.json: .root.path: rootfs \"" + dir + "/rootfs\" does not exist");
  }
  crx::write_file(dir + "/rootfs", "not a dir");
  EXPECT_THROW(crx::spec::resolve_rootfs(spec, dir), crx::Error);
}

// create and restore both resolve a bundle this way: through symlinks, from
// a relative path, "" meaning the current directory.
TEST_F(Bundle, LoadBundleResolvesDirectorySpecAndRootfs) {
  std::filesystem::create_directory(dir + "/rootfs");
  write_config(spec_test::minimal_config().dump());
  std::filesystem::create_directory_symlink(dir, dir + "-link");
  auto b = crx::spec::load_bundle(dir + "-link/");
  std::filesystem::remove(dir + "-link");
  EXPECT_EQ(b.dir, dir);
  EXPECT_EQ(b.rootfs, dir + "/rootfs");
  EXPECT_EQ(b.spec.process.args, (std::vector<std::string>{"sh"}));

  auto cwd = std::filesystem::current_path();
  std::filesystem::current_path(dir);
  auto here = crx::spec::load_bundle("");
  auto dot = crx::spec::load_bundle("./rootfs/..");
  std::filesystem::current_path(cwd);
  EXPECT_EQ(here.dir, dir);
  EXPECT_EQ(here.rootfs, dir + "/rootfs");
  EXPECT_EQ(dot.dir, dir);
}

TEST_F(Bundle, LoadBundleErrorsKeepTheirCause) {
  try {
    crx::spec::load_bundle(dir + "/missing");
    FAIL() << "no error";
  } catch (const crx::Error& e) {
    EXPECT_EQ(std::string(e.what()), "bundle " + dir + "/missing: No such file or directory");
    EXPECT_EQ(e.sys_errno(), ENOENT);
    EXPECT_EQ(e.cause(), crx::Cause::NotFound);
  }
  write_config(spec_test::minimal_config().dump());
  try {
    crx::spec::load_bundle(dir);
    FAIL() << "no error";
  } catch (const crx::Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "config.json: .root.path: rootfs \"" + dir + "/rootfs\" does not exist");
  }
}

}  // namespace
