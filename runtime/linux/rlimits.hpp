// process.rlimits, process.oomScoreAdj and process.noNewPrivileges.
// Apply rlimits and oom_score_adj while the child is still privileged
// (raising a hard limit or lowering oom_score_adj needs CAP_SYS_RESOURCE).
#pragma once
#include <vector>

#include "spec/spec.hpp"

namespace crx::linux_ {

// setrlimit for each entry; errors name the limit ("RLIMIT_NOFILE").
void apply_rlimits(const std::vector<spec::Rlimit>& rlimits);
// Writes /proc/<pid>/oom_score_adj ("self" when pid is 0).
void write_oom_score_adj(int score, int pid = 0);
// prctl(PR_SET_NO_NEW_PRIVS, 1).
void set_no_new_privs();

}  // namespace crx::linux_
