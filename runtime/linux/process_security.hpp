// The last steps of the container child before execve, in runc's order:
//   apparmor profile (for the execve), rlimits, oom_score_adj, no_new_privs,
//   seccomp (here if !noNewPrivileges: loading needs CAP_SYS_ADMIN),
//   bounding-set drop, PR_SET_KEEPCAPS, setgroups/setresgid/setresuid,
//   clear KEEPCAPS, capset (E/P/I) + ambient, umask,
//   seccomp (here if noNewPrivileges: as late as possible).
// sysctls, hooks, console and preserved fds are separate calls (see their
// headers). chdir(process.cwd) is the caller's: do it before this call
// (the new user may not be allowed to reach the directory afterwards).
// oomScoreAdj: inside a new user namespace the child may raise but not lower
// it; write it first from the parent with write_oom_score_adj(score, pid)
// (rlimits.hpp); the child's own write of the same value then succeeds.
#pragma once
#include "common/unique_fd.hpp"
#include "linux/seccomp.hpp"
#include "spec/spec.hpp"

namespace crx::linux_ {

// seccomp may be null (no linux.seccomp). Returns the seccomp notify
// listener fd when the filter uses SCMP_ACT_NOTIFY (send it to
// listenerPath, see seccomp.hpp), an invalid fd otherwise. Throws crx::Error.
UniqueFd finalize_process(const spec::Process& process, const SeccompFilter* seccomp);

}  // namespace crx::linux_
