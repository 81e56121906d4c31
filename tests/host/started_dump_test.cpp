// checkpoint::StartedDump::send_ahead with the real CRIU on the host: the
// final dump's request is sent while the container still runs, and CRIU
// waits at its pre-dump notification, before it looks at any task. Here
// CRIU never goes past that point (checkpoints run in the qemu guests,
// tests/vm/migrate checks a whole move): what is checked is that it
// waits there with the task untouched, that a request other than the one
// sent makes it stop there and go, and that an unused one goes too. It
// runs where CRIU can dump (the guests: tests/vm/test_host_suite.py).
#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "checkpoint/criu_options.hpp"
#include "checkpoint/criu_rpc.hpp"
#include "common/error.hpp"
#include "common/unique_fd.hpp"
#include "harness.hpp"
#include "../support/temp_dir.hpp"

namespace crx::test {
namespace {

using checkpoint::DumpOptions;
using checkpoint::StartedDump;

// A child that sleeps until killed: the task the request names.
class Sleeper {
 public:
  Sleeper() {
    pid_ = ::fork();
    if (pid_ == 0) {
      ::pause();
      ::_exit(0);
    }
  }
  ~Sleeper() {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, nullptr, 0);
  }
  pid_t pid() const { return pid_; }
  // Its state letter in /proc/<pid>/stat: 'S' sleeping, 't' traced...
  char state() const {
    std::string stat = read_text("/proc/" + std::to_string(pid_) + "/stat");
    size_t close = stat.rfind(')');
    return close == std::string::npos || close + 2 >= stat.size() ? '?' : stat[close + 2];
  }
  // Whether anything ptrace-attached it (TracerPid in /proc/<pid>/status).
  bool traced() const {
    std::string status = read_text("/proc/" + std::to_string(pid_) + "/status");
    return status.find("TracerPid:\t0\n") == std::string::npos;
  }

 private:
  pid_t pid_ = -1;
};

bool gone(pid_t pid) { return ::kill(pid, 0) != 0; }

TEST(StartedDump, SentAheadWaitsAtPreDumpAndGoesWhenTheRequestChanged) {
  CRX_REQUIRE_ROOT();
  // The host's kernel may be one CRIU cannot set up a dump on (CRIU 3.17
  // fails on this test bed's host vDSO); tests/vm/test_host_suite.py runs
  // this in a guest, where it can, and says so.
  if (!std::getenv("CRX_TEST_CRIU_DUMPS"))
    GTEST_SKIP() << "CRIU dumps in the guests: run there (CRX_TEST_CRIU_DUMPS=1)";
  int sv[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
  UniqueFd page(sv[0]), peer(sv[1]);
  TempDir images("crx-dump-ahead");
  UniqueFd dir(::open(images.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  ASSERT_TRUE(dir);
  Sleeper task;
  DumpOptions o;
  o.pid = task.pid();
  o.images_dir_fd = dir.get();
  o.log_file = "dump.log";
  o.leave_running = true;
  o.page_server = checkpoint::PageServerTarget{"", 0, page.get()};
  StartedDump::Setup s;
  s.inherit_fds = {page.get()};

  {
    StartedDump d(s);
    const pid_t criu = d.pid();
    ASSERT_TRUE(d.send_ahead(o));
    // CRIU read the request (its log is open, the dump announced) and
    // waits: it has not seized the task.
    const std::string log = read_text(images.path() + "/dump.log");
    EXPECT_NE(log.find("Dumping processes (pid: " + std::to_string(task.pid()) + ")"),
              std::string::npos)
        << log;
    EXPECT_FALSE(gone(criu));
    EXPECT_FALSE(task.traced());
    EXPECT_EQ(task.state(), 'S');
    // Another request (here: the tasks killed after the dump) is not the
    // one CRIU set itself up for.
    DumpOptions other = o;
    other.leave_running = false;
    EXPECT_FALSE(d.run(other));
    EXPECT_TRUE(gone(criu));  // stopped at its pre-dump, exited, reaped
    EXPECT_NE(read_text(images.path() + "/dump.log").find("Pre dump script failed"),
              std::string::npos);
    EXPECT_FALSE(task.traced());
    EXPECT_EQ(task.state(), 'S');
    try {
      d.run(o);
      ADD_FAILURE() << "a started dump ran twice";
    } catch (const Error& e) {
      EXPECT_EQ(e.cause(), Cause::Invalid) << e.what();
    }
  }
  {
    // Sent ahead and never run (a rollback before the freeze): CRIU goes
    // with the object, the task untouched.
    pid_t criu;
    {
      StartedDump d(s);
      criu = d.pid();
      ASSERT_TRUE(d.send_ahead(o));
      EXPECT_THROW(d.send_ahead(o), Error);
    }
    EXPECT_TRUE(gone(criu));
    EXPECT_FALSE(task.traced());
    EXPECT_EQ(task.state(), 'S');
  }
}

}  // namespace
}  // namespace crx::test
