// restore_container() in two steps, for a migration's destination: what
// needs only the bundle is done ahead (while the source's pre-copy rounds
// run), what needs the final images when they are there.
//
// The constructor (prepare): bundle and config.json loaded, the state dir
// created (the id is taken; its lock is held while prepare() and run()
// work, not in between: `crx list` would wait for it), the cgroup made with the bundle's
// limits and recorded (restore-cgroup.json), the restore guard forked, the
// rootfs bind-mounted for CRIU, the tmpfs mounts and /dev crx re-creates
// staged, bind mount targets made, a network namespace joined by path
// opened, CRIU's work dir opened and `criu swrk` started and waiting
// (criu_rpc.hpp, StartedRestore).
// run(images_dir) (the rest): the images' crx-container.json read (its
// resources applied to the cgroup, its pid file and paused state used),
// the request sent, CRIU's notifications served (hooks, pre-resume, the
// console), state.json saved; the staged mounts are detached once CRIU
// has bound them in, and the state dir's lock is let go (the container is
// an ordinary crx container then).
// Destroying it before run() succeeded (never run, run failed, an
// exception anywhere) removes everything it made: criu, restored tasks,
// cgroup, mounts, state dir, guard. One owner for all of it.
#pragma once
#include <sys/types.h>

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cgroup/cgroup.hpp"
#include "checkpoint/container_checkpoint.hpp"
#include "checkpoint/criu_options.hpp"
#include "checkpoint/fresh_netns.hpp"
#include "common/unique_fd.hpp"
#include "spec/bundle.hpp"
#include "state/store.hpp"

namespace crx::checkpoint {

struct CarriedState;
class CriuRoot;
class RestoreGuard;
class StagedTmpfs;
class CgroupYard;
class StartedRestore;

class PreparedRestore {
 public:
  // r.image_path: the images dir run() will get, or, with r.images_below,
  // a directory below which it will be (a migration: one dir per round).
  // r.hold is not used here (run() takes it). Throws Error; nothing is
  // left then.
  PreparedRestore(const container::GlobalOptions& g, std::string id, RestoreRequest r);
  PreparedRestore(const PreparedRestore&) = delete;
  PreparedRestore& operator=(const PreparedRestore&) = delete;
  ~PreparedRestore();

  // Restores from images_dir (as restore_container; once). Returns the
  // restored init's pid. On error everything is removed before it throws.
  // `resumed`, when given, is called once the tasks run and the container
  // is saved as this host's (CRIU's post-resume): what run() does after it
  // is CRIU's exit and crx's clean-up, which no longer undo the restore
  // (a failure there is logged). What it throws, run() throws at its end,
  // the container kept.
  pid_t run(const std::string& images_dir, const std::function<void()>& hold,
            const std::function<void()>& resumed = {});
  // Before run(): the tasks' memory comes from a `criu lazy-pages` daemon
  // listening in the work dir, through userfaultfd, instead of being copied
  // in by the restore (RestoreFlags::lazy_pages, decided late).
  void set_lazy_pages() { o_.lazy_pages = true; }
  // Only from within run()'s hold: sets these sysctls in the restored
  // tasks' network namespace now, before they run (a migration's, read on
  // the source after the dump). Throws Error naming the one not set.
  void set_net_sysctls(const NetSysctls& sysctls);
  // Only from within run()'s hold: writes state.json now, while the
  // restored tasks wait, so that their resume is followed by as little as
  // possible (a migration calls it while its commit travels). The
  // container is not this host's until the resume: a restore that fails
  // after this still removes the state dir with the rest. Throws Error
  // outside the hold.
  void save_state_ahead();

  // The cgroup made for the restore, in the cgroup2 hierarchy
  // (cgroup::criu_v2_path); "" unless the host is pure cgroup2.
  std::string cgroup_v2_path() const;

  // The criu waiting for the request (-1 once run); for tests and logs.
  pid_t criu_pid() const;
  const std::string& state_dir() const;

 private:
  void prepare();
  // The container becomes this host's: state.json (unless written ahead
  // for this pid), pid file; from here on nothing of it is removed.
  void save_state(pid_t pid);
  // state.json for the restored init pid, with what the checkpoint
  // carried (carried_).
  void write_state(pid_t pid);
  void release() noexcept;
  // The state dir made in prepare(), locked; nullopt when it is gone (or
  // is another container's by now).
  std::optional<state::StateDir> reopen_state_dir() const;

  container::GlobalOptions g_;
  std::string id_;
  RestoreRequest r_;
  spec::Bundle bundle_;
  // Locked while prepare() and run() work on it, not in between.
  std::optional<state::StateDir> dir_;
  std::string state_dir_;
  dev_t state_dir_dev_ = 0;
  ino_t state_dir_ino_ = 0;
  std::optional<cgroup::Cgroup> cg_;
  std::string cgroup_v2_path_;  // cgroup_v2_path()
  std::unique_ptr<RestoreGuard> guard_;
  UniqueFd work_;
  std::unique_ptr<CriuRoot> root_;
  std::unique_ptr<StagedTmpfs> tmpfs_;
  std::unique_ptr<CgroupYard> yard_;  // CRIU's cgroup yard, made ahead
  std::vector<UniqueFd> joined_namespaces_;
  // A new network namespace for images that hold none (the container's
  // was a new one: CarriedState::new_netns_outside_images), made ahead.
  UniqueFd new_netns_;
  RestoreOptions o_;  // everything but the images dir
  std::unique_ptr<StartedRestore> criu_;
  pid_t restored_ = 0;  // run(): the restored init, once CRIU named it
  // run(): what the images' crx-container.json carried (null: none), and
  // the pid file to write.
  std::unique_ptr<CarriedState> carried_;
  std::string pid_file_;
  bool in_hold_ = false;     // run() is in its hold
  bool state_ahead_ = false;  // save_state_ahead() wrote state.json
  bool used_ = false;
  bool done_ = false;
};

}  // namespace crx::checkpoint
