// Test helpers shared by the unit and host tests: a sleeping child, and a
// wait for a child (or an orphan we are the subreaper of) that cannot block
// for ever.
#pragma once
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

namespace crx::testing {

// The wait status of pid, -1 when it still runs after ~30 s, -2 when it is
// not ours to wait for.
inline int reap(pid_t pid) {
  for (int i = 0; i < 3000; ++i) {
    int status = 0;
    pid_t r = ::waitpid(pid, &status, WNOHANG);
    if (r == pid) return status;
    if (r < 0 && errno != EINTR) return -2;
    ::usleep(10000);
  }
  return -1;
}

// A child that sleeps for 10 min: a task for a test to put in a cgroup and
// kill (reap it afterwards).
inline pid_t sleeper() {
  pid_t pid = ::fork();
  if (pid == 0) {
    ::execl("/bin/sleep", "sleep", "600", static_cast<char*>(nullptr));
    ::_exit(127);
  }
  return pid;
}

}  // namespace crx::testing
