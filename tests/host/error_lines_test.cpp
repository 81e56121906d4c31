// The one-line errors the CLI prints stay exactly as they were while the
// code behind them decides on causes (errno, crx::Cause) instead of text:
// these are the lines (and runc's substrings in them) containerd's shim
// matches: "does not exist", "already exists", "container not running".
#include <sys/stat.h>
#include <unistd.h>

#include "harness.hpp"

namespace crx::test {
namespace {

void expect_line(const Result& r, const std::string& line) {
  EXPECT_EQ(r.status, 1) << r.err;
  EXPECT_EQ(r.err, "crx: " + line + "\n");
}

TEST(ErrorLines, AMissingContainerDoesNotExistForEveryCommand) {
  auto id = unique_id("missing");
  for (std::vector<std::string> args : std::vector<std::vector<std::string>>{
           {"state"}, {"start"}, {"kill"}, {"delete"}, {"pause"}, {"resume"}, {"ps"},
           {"events"}, {"update"}}) {
    args.push_back(id);
    expect_line(run_crx(args), "container " + id + " does not exist");
  }
  expect_line(run_crx({"exec", id, "true"}), "container " + id + " does not exist");
}

TEST(ErrorLines, ASecondCreateAlreadyExists) {
  CRX_REQUIRE_ROOT();
  Bundle b({"true"});
  auto id = unique_id();
  ASSERT_EQ(run_crx({"create", "--bundle", b.dir(), id}).status, 0);
  expect_line(run_crx({"create", "--bundle", b.dir(), id}), "container with id " + id + " already exists");
  force_delete(id);
}

TEST(ErrorLines, TheInitsErrorCrossesToTheParentUnchanged) {
  CRX_REQUIRE_ROOT();
  Bundle b({"/no/such/binary"});
  auto id = unique_id();
  expect_line(run_crx({"create", "--bundle", b.dir(), id}),
              "exec: \"/no/such/binary\": stat /no/such/binary: no such executable file");
  expect_nothing_left(id);
}

TEST(ErrorLines, AStoppedContainerIsNotRunning) {
  CRX_REQUIRE_ROOT();
  Bundle b({"true"});
  auto id = unique_id();
  ASSERT_EQ(run_crx({"run", "-d", "--bundle", b.dir(), id}).status, 0);
  for (int i = 0; i < 500; ++i) {
    if (nlohmann::json::parse(run_crx({"state", id}).out)["status"] == "stopped") break;
    ::usleep(10000);
  }
  expect_line(run_crx({"exec", id, "true"}),
              "cannot exec in a stopped container " + id + ": container not running");
  expect_line(run_crx({"kill", id, "KILL"}), "container " + id + " not running");
  expect_line(run_crx({"pause", id}), "container " + id + ": container not running");
  force_delete(id);
}

TEST(ErrorLines, AHalfCreatedContainerDoesNotExist) {
  CRX_REQUIRE_ROOT();
  auto id = unique_id("half");
  // What a create killed before it wrote state.json leaves.
  ASSERT_EQ(::mkdir((state_root() + "/" + id).c_str(), 0711), 0);
  expect_line(run_crx({"state", id}),
              "container " + id + " does not exist (no state.json; half-created? use delete --force)");
  EXPECT_EQ(run_crx({"delete", "--force", id}).status, 0);
}

}  // namespace
}  // namespace crx::test
