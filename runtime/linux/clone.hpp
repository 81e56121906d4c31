// fork()-like raw clone for the runtime's own children (crx is
// single-threaded, so a raw clone is as safe as fork and takes namespace
// flags), optionally straight into a cgroup2 directory.
#pragma once
#include <sys/types.h>

namespace crx::linux_ {

struct Cloned {
  pid_t pid = 0;              // 0 in the child
  bool in_cgroup = false;     // the child started in cgroup_fd's cgroup
};

// clone(flags | SIGCHLD). With cgroup_fd >= 0 it first tries
// clone3(CLONE_INTO_CGROUP): the child is born in that cgroup2 directory,
// which costs no cgroup.procs write (and none of its RCU wait). If the
// kernel refuses (no clone3, a cgroup that cannot take it), it falls back to
// a plain clone and says so in in_cgroup. Throws with `what` on failure.
Cloned clone_process(unsigned long flags, int cgroup_fd, const char* what);

}  // namespace crx::linux_
