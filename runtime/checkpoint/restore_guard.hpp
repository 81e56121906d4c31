// What a restore leaves running when crx dies in the middle of it (SIGKILL,
// a crash, the OOM killer), and who removes it.
//
// criu swrk (our child) forks the tasks it restores; they wait on CRIU for
// every stage, and nothing ties them to crx: when crx and criu die, the
// tasks CRIU had made so far stay, stopped forever, holding their QPs and
// memory. They are found two ways:
//   - in the cgroup crx made for the container (CRIU moves each task into
//     it right after forking it, before it forks its children);
//   - by their title: CRIU's setproctitle "criu: restore --rpc -D <images
//     dir>", which every task it forks inherits until the restorer maps the
//     restored memory (covers a task between its fork and its cgroup move).
// Three layers remove them:
//   - criu swrk dies with crx (spawn with die_with_parent, PR_SET_PDEATHSIG,
//     in criu_rpc.cpp);
//   - RestoreGuard: a process forked for the length of a restore that kills
//     both kinds once crx is gone without disarming it;
//   - the next `crx receive` (migrate/stale_sessions.hpp) kills them again
//     for a dead receiver's session: a guard can be killed too (a service
//     manager killing the whole unit).
#pragma once
#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

namespace crx::checkpoint {

struct RestoreLeftovers {
  // The container's cgroup directories (every hierarchy).
  std::vector<std::string> cgroup_dirs;
  // CRIU's title prefix of the restore's tasks, "criu: restore --rpc -D
  // /path" (restore_title()). With whole_title, the title must end there
  // (a NUL or a space follows): /x/1 does not match /x/10.
  std::string title;
  bool whole_title = true;
};

// CRIU's (3.17) title of the process restoring from images_dir (resolved as
// CRIU does: the real path).
std::string restore_title(const std::string& images_dir);

// SIGKILL to every process in the cgroups (cgroup.kill where there is one,
// cgroup.procs otherwise, then thawed so that frozen ones die) and every
// process whose /proc/<pid>/cmdline starts with the title; again until a
// pass finds none. Returns how many were killed. Uses no heap and only
// system calls once prepared, so a forked child of a threaded process may
// run it.
int kill_restore_leftovers(const RestoreLeftovers& l);

// Forks the guard. The guard closes every fd it inherited but its end of a
// pipe to us, ignores terminal and termination signals and waits: if the
// pipe closes without disarm() (this process is gone), it kills the
// leftovers (kill_restore_leftovers) and exits. disarm() (and the
// destructor) kill and reap the guard.
// restore_container() records the cgroup it made in the container's state
// directory (restore-cgroup.json, Cgroup::save()) until state.json is
// saved: a restore that never finished is found by it.
void record_restoring_cgroup(const std::string& state_dir, const std::string& saved_cgroup);
void forget_restoring_cgroup(const std::string& state_dir);
// The record record_restoring_cgroup() left in state_dir, if any (for
// `crx delete --force` of a container whose restore was killed).
std::optional<std::string> restoring_cgroup(const std::string& state_dir);

// For a restore whose restorer died (the next `crx receive`): kills the
// tasks in the cgroup recorded in state_dir (none when state_dir is empty
// or has no record) and those titled for an images directory below
// images_root, then removes that cgroup. One line per thing done.
std::vector<std::string> remove_unfinished_restore(const std::string& state_dir,
                                                   const std::string& images_root);

class RestoreGuard {
 public:
  explicit RestoreGuard(RestoreLeftovers l);
  RestoreGuard(const RestoreGuard&) = delete;
  RestoreGuard& operator=(const RestoreGuard&) = delete;
  ~RestoreGuard();
  void disarm();
  pid_t pid() const { return pid_; }

 private:
  RestoreLeftovers l_;
  pid_t pid_ = -1;
  int pipe_w_ = -1;
};

}  // namespace crx::checkpoint
