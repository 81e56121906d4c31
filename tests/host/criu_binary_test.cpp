// runc's global --criu PATH: the migration commands run that criu, not the
// one in PATH.
#include <sys/stat.h>

#include "harness.hpp"

namespace crx::test {
namespace {

// A stand-in criu that records how it was called and fails.
std::string recording_criu(const std::string& dir) {
  std::string path = dir + "/my-criu";
  write_text(path, "#!/bin/sh\necho \"$@\" >> " + dir + "/calls\nexit 3\n");
  ::chmod(path.c_str(), 0755);
  return path;
}

TEST(CriuBinary, CheckpointRunsTheCriuNamedByTheGlobalFlag) {
  CRX_REQUIRE_ROOT();
  Bundle b({"sleep", "1000"});
  auto id = unique_id();
  ASSERT_EQ(run_crx({"run", "-d", "--bundle", b.dir(), id}).status, 0);
  auto dir = temp_dir("criu-binary");
  auto criu = recording_criu(dir);
  auto r = run_crx({"--criu", criu, "checkpoint", "--image-path", dir + "/img", id});
  EXPECT_NE(r.status, 0);
  EXPECT_NE(read_text(dir + "/calls").find("swrk"), std::string::npos) << "criu not run: " << r.err;
  // The failed dump leaves the container as it was.
  EXPECT_EQ(state_of(id)["status"], "running") << r.err;
  force_delete(id);
  expect_nothing_left(id);
}

TEST(CriuBinary, AMissingCriuIsNamedInTheError) {
  CRX_REQUIRE_ROOT();
  Bundle b({"sleep", "1000"});
  auto id = unique_id();
  ASSERT_EQ(run_crx({"run", "-d", "--bundle", b.dir(), id}).status, 0);
  auto dir = temp_dir("criu-binary");
  auto r = run_crx({"--criu", "/nonexistent/criu", "checkpoint", "--image-path", dir + "/img", id});
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.err.find("/nonexistent/criu"), std::string::npos) << r.err;
  EXPECT_EQ(state_of(id)["status"], "running") << r.err;
  force_delete(id);
  expect_nothing_left(id);
}

}  // namespace
}  // namespace crx::test
