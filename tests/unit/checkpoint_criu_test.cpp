#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include "checkpoint/criu_options.hpp"
#include "checkpoint/criu_rpc.hpp"
#include "common/error.hpp"

namespace {

using namespace crx::checkpoint;

TEST(CheckpointCriu, LogTailPrefersErrorLinesAndStripsTimestamps) {
  std::string log =
      "(00.000010) Version: 3.17.1\n"
      "(00.001000) Error (criu/cr-dump.c:1000): first problem\n"
      "(00.002000) Warn  (criu/x.c:1): noise\n"
      "(00.003000) Error (criu/cr-dump.c:2000): Dumping FAILED.\n";
  EXPECT_EQ(criu_log_tail(log, 3),
            "Error (criu/cr-dump.c:1000): first problem; Error (criu/cr-dump.c:2000): Dumping FAILED.");
  EXPECT_EQ(criu_log_tail(log, 1), "Error (criu/cr-dump.c:1000): first problem");
}

TEST(CheckpointCriu, LogTailKeepsTheFirstErrorBeforeTheLastOnes) {
  std::string log =
      "(00.001000) Error (crx_ibverbs): the cause\n"
      "(00.002000) Error (criu/files.c:1213): Unable to open fd=3 id=0x28\n"
      "(00.003000)      1: Error (criu/cr-restore.c:1495): 2 exited, status=1\n"
      "(00.004000) Error (criu/cr-restore.c:2537): Restoring FAILED.\n";
  EXPECT_EQ(criu_log_tail(log, 3),
            "Error (crx_ibverbs): the cause; "
            "     1: Error (criu/cr-restore.c:1495): 2 exited, status=1; "
            "Error (criu/cr-restore.c:2537): Restoring FAILED.");
}

TEST(CheckpointCriu, LogTailWithoutErrorsGivesLastLines) {
  EXPECT_EQ(criu_log_tail("a\nb\n\nc\n", 2), "b; c");
  EXPECT_EQ(criu_log_tail("", 2), "");
}

TEST(CheckpointCriu, CgroupModesParseAndUnknownIsNamed) {
  EXPECT_EQ(parse_cgroup_mode("soft"), CgroupMode::Soft);
  EXPECT_EQ(parse_cgroup_mode("strict"), CgroupMode::Strict);
  EXPECT_EQ(cgroup_mode_name(CgroupMode::Full), "full");
  try {
    parse_cgroup_mode("hard");
    FAIL();
  } catch (const crx::Error& e) {
    EXPECT_NE(std::string(e.what()).find("\"hard\""), std::string::npos);
  }
}

TEST(CheckpointCriu, MissingCriuBinaryIsAClearError) {
  set_criu_binary("/nonexistent/criu");
  try {
    criu_version();
    FAIL();
  } catch (const crx::Error& e) {
    EXPECT_NE(std::string(e.what()).find("exec /nonexistent/criu"), std::string::npos) << e.what();
  }
  set_criu_binary("criu");
}

TEST(CheckpointCriu, CriuThatExitsWithoutAnsweringIsReported) {
  // `false swrk 3` exits at once: the client must not hang.
  set_criu_binary("false");
  try {
    criu_version();
    FAIL();
  } catch (const crx::Error& e) {
    EXPECT_NE(std::string(e.what()).find("criu version failed: criu exited with status 1"),
              std::string::npos)
        << e.what();
  }
  set_criu_binary("criu");
}

}  // namespace
