#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include "checkpoint/criu_options.hpp"
#include "checkpoint/criu_rpc.hpp"
#include "common/error.hpp"
#include "common/unique_fd.hpp"
#include "../support/temp_dir.hpp"

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

// A DumpOptions whose only fd for CRIU is the page channel page_fd; its
// images dir (where the request's CRIU config file goes) is images_fd.
DumpOptions dump_to(int page_fd, int images_fd) {
  DumpOptions o;
  o.pid = 1;
  o.images_dir_fd = images_fd;
  o.page_server = PageServerTarget{"", 0, page_fd};
  return o;
}

// A started dump's criu answered its version, so it waits; a request that
// names an fd it did not inherit, or wants CRIU in another network
// namespace, is not sent to it (run() is false), and either way the child
// is gone after run().
TEST(CheckpointCriu, StartedDumpRunsOnlyARequestItWasStartedFor) {
  int sv[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
  crx::UniqueFd a(sv[0]), b(sv[1]);
  crx::test::TempDir images("crx-started-dump");
  crx::UniqueFd dir(::open(images.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  ASSERT_TRUE(dir);
  StartedDump::Setup s;
  s.inherit_fds = {a.get()};
  for (int unfit = 0; unfit < 2; ++unfit) {
    StartedDump d(s);  // real criu
    pid_t pid = d.pid();
    ASSERT_GT(pid, 0);
    EXPECT_EQ(::kill(pid, 0), 0);
    DumpOptions o = dump_to(b.get(), dir.get());  // not inherited
    crx::UniqueFd ns(::open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC));
    ASSERT_TRUE(ns);
    if (unfit == 1) {
      o = dump_to(a.get(), dir.get());
      o.criu_namespace_fds = {ns.get()};  // started with none given
    }
    EXPECT_FALSE(d.run(o)) << unfit;
    EXPECT_EQ(d.pid(), -1);
    EXPECT_NE(::kill(pid, 0), 0);  // ended and reaped
    try {
      d.run(dump_to(a.get(), dir.get()));
      FAIL();
    } catch (const crx::Error& e) {
      EXPECT_EQ(e.cause(), crx::Cause::Invalid);
    }
  }
}

TEST(CheckpointCriu, StartedDumpOfACriuThatDoesNotAnswerIsAnError) {
  set_criu_binary("false");
  try {
    StartedDump d(StartedDump::Setup{});
    FAIL();
  } catch (const crx::Error& e) {
    EXPECT_NE(std::string(e.what()).find("criu dump failed: criu exited with status 1"),
              std::string::npos)
        << e.what();
  }
  set_criu_binary("criu");
}

TEST(CheckpointCriu, AnUnusedStartedDumpEndsItsCriu) {
  pid_t pid;
  {
    StartedDump d(StartedDump::Setup{});
    pid = d.pid();
    ASSERT_GT(pid, 0);
  }
  EXPECT_NE(::kill(pid, 0), 0);  // exited and reaped
}

}  // namespace
