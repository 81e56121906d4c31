// runc's global --criu PATH: the migration commands run that criu, not the
// one in PATH.
#include <sys/stat.h>

#include "harness.hpp"

namespace crx::test {
namespace {

// A running container checkpointed with a criu that cannot dump it: the
// command fails and leaves the container as it was.
class CriuBinary : public ::testing::Test {
 protected:
  void SetUp() override {
    CRX_REQUIRE_ROOT();
    ASSERT_EQ(run_crx({"run", "-d", "--bundle", bundle_.dir(), id_}).status, 0);
    started_ = true;
  }
  void TearDown() override {
    if (!started_) return;
    force_delete(id_);
    expect_nothing_left(id_);
  }
  Result checkpoint_with(const std::string& criu) {
    auto r = run_crx({"--criu", criu, "checkpoint", "--image-path", dir_ + "/img", id_});
    EXPECT_NE(r.status, 0);
    EXPECT_EQ(state_of(id_)["status"], "running") << r.err;
    return r;
  }

  Bundle bundle_{{"sleep", "1000"}};
  std::string id_ = unique_id();
  TempDir tmp_{"crx-criu-binary"};
  const std::string& dir_ = tmp_.path();
  bool started_ = false;
};

TEST_F(CriuBinary, CheckpointRunsTheCriuNamedByTheGlobalFlag) {
  // A stand-in criu that records how it was called and fails.
  std::string criu = dir_ + "/my-criu";
  write_text(criu, "#!/bin/sh\necho \"$@\" >> " + dir_ + "/calls\nexit 3\n");
  ::chmod(criu.c_str(), 0755);
  auto r = checkpoint_with(criu);
  EXPECT_NE(read_text(dir_ + "/calls").find("swrk"), std::string::npos) << "criu not run: " << r.err;
}

TEST_F(CriuBinary, AMissingCriuIsNamedInTheError) {
  auto r = checkpoint_with("/nonexistent/criu");
  EXPECT_NE(r.err.find("/nonexistent/criu"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace crx::test
