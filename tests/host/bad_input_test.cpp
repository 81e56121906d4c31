// Bad input gets one clear line naming the problem, a non-zero exit and
// nothing left behind; a create killed half way is cleanable.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>

#include "harness.hpp"

namespace crx::test {
namespace {

using nlohmann::json;

void expect_clean_failure(Bundle& b, const std::string& must_contain) {
  auto id = unique_id();
  auto r = run_crx({"run", "--bundle", b.dir(), id});
  EXPECT_NE(r.status, 0) << "expected failure, stdout: " << r.out;
  EXPECT_NE(r.err.find(must_contain), std::string::npos) << r.err;
  // one line
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  expect_nothing_left(id);
}

TEST(BadInput, MalformedJson) {
  Bundle b;
  write_text(b.dir() + "/config.json", "{\"ociVersion\": \"1.0.0\", \"process\": ");
  expect_clean_failure(b, "config.json");
}

TEST(BadInput, MissingRequiredFieldNamesItsPath) {
  Bundle b;
  b.config().erase("ociVersion");
  b.write();
  expect_clean_failure(b, "ociVersion");
}

TEST(BadInput, WrongTypeNamesItsPath) {
  Bundle b;
  b.config()["process"]["args"] = 5;
  b.write();
  expect_clean_failure(b, ".process.args");
}

TEST(BadInput, MissingRootfs) {
  Bundle b;
  b.config()["root"]["path"] = "/nonexistent/rootfs";
  b.write();
  expect_clean_failure(b, "/nonexistent/rootfs");
}

TEST(BadInput, UnknownCapability) {
  Bundle b;
  b.config()["process"]["capabilities"]["bounding"].push_back("CAP_NO_SUCH");
  b.write();
  expect_clean_failure(b, "CAP_NO_SUCH");
}

TEST(BadInput, UnknownNamespaceType) {
  Bundle b;
  b.config()["linux"]["namespaces"].push_back({{"type", "bogus"}});
  b.write();
  expect_clean_failure(b, "bogus");
}

TEST(BadInput, UnknownSyscall) {
  Bundle b;
  b.config()["linux"]["seccomp"] = {{"defaultAction", "SCMP_ACT_ALLOW"},
                                    {"syscalls", json::array({{{"names", {"no_such_syscall"}}, {"action", "SCMP_ACT_ERRNO"}}})}};
  b.write();
  expect_clean_failure(b, "no_such_syscall");
}

TEST(BadInput, MissingExecutableFailsAtCreate) {
  CRX_REQUIRE_ROOT();
  Bundle b({"/no/such/binary"});
  expect_clean_failure(b, "/no/such/binary");
}

TEST(BadInput, InvalidIds) {
  Bundle b;
  for (const std::string& id : std::vector<std::string>{"", "a/b", "..", "bad id", std::string(300, 'x'), "nul\x01"}) {
    auto r = run_crx({"run", "--bundle", b.dir(), id});
    EXPECT_NE(r.status, 0) << "id '" << id << "'";
    EXPECT_NE(r.err.find("container id"), std::string::npos) << r.err;
  }
  EXPECT_FALSE(std::filesystem::exists(state_root() + "/a"));
}

TEST(BadInput, DuplicateIdIsRefusedAndTheFirstSurvives) {
  CRX_REQUIRE_ROOT();
  Bundle b({"sleep", "1000"});
  auto id = unique_id();
  ASSERT_EQ(run_crx({"run", "-d", "--bundle", b.dir(), id}).status, 0);
  auto r = run_crx({"run", "-d", "--bundle", b.dir(), id});
  EXPECT_NE(r.status, 0);
  EXPECT_NE(r.err.find("already exists"), std::string::npos) << r.err;
  EXPECT_EQ(json::parse(run_crx({"state", id}).out)["status"], "running");
  force_delete(id);
  expect_nothing_left(id);
}

TEST(BadInput, CreateKilledHalfWayIsCleanableByDeleteForce) {
  CRX_REQUIRE_ROOT();
  TempDir tmp("crx-halfway");
  const std::string& dir = tmp.path();
  Bundle b({"true"});
  // the createRuntime hook signals that create is mid-way, then blocks
  b.config()["hooks"] = {{"createRuntime", {{{"path", "/bin/sh"},
                                             {"args", {"sh", "-c", "touch " + dir + "/mid; sleep 100"}}}}}};
  b.write();
  auto id = unique_id();
  pid_t pid = ::fork();
  if (pid == 0) {
    ::execl(CRX_BINARY, CRX_BINARY, "--root", state_root().c_str(), "create", "--bundle", b.dir().c_str(),
            id.c_str(), nullptr);
    ::_exit(127);
  }
  for (int i = 0; i < 500 && !std::filesystem::exists(dir + "/mid"); ++i) ::usleep(10000);
  ASSERT_TRUE(std::filesystem::exists(dir + "/mid"));
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
  EXPECT_TRUE(std::filesystem::exists(state_root() + "/" + id));
  run_sh("pkill -f 'touch " + dir + "/mid'");
  auto r = run_crx({"delete", "--force", id});
  EXPECT_EQ(r.status, 0) << r.err;
  expect_nothing_left(id);
}

}  // namespace
}  // namespace crx::test
