#include "linux/clone.hpp"

#include <linux/sched.h>
#include <signal.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <string>

#include "common/error.hpp"

namespace crx::linux_ {
namespace {

long clone3_into(unsigned long flags, int cgroup_fd) {
  struct clone_args args {};
  args.flags = flags | CLONE_INTO_CGROUP;
  args.exit_signal = SIGCHLD;
  args.cgroup = static_cast<__u64>(cgroup_fd);
  return ::syscall(SYS_clone3, &args, sizeof args);
}

}  // namespace

Cloned clone_process(unsigned long flags, int cgroup_fd, const char* what) {
  if (cgroup_fd >= 0) {
    long pid = clone3_into(flags, cgroup_fd);
    if (pid >= 0) return {static_cast<pid_t>(pid), true};
  }
  long pid = ::syscall(SYS_clone, flags | SIGCHLD, nullptr, nullptr, nullptr, nullptr);
  if (pid < 0) throw_errno(what);
  return {static_cast<pid_t>(pid), false};
}

}  // namespace crx::linux_
