// The cgroup yard a restore's CRIU works in, made by crx before the
// images arrive.
//
// CRIU 3.17 moves restored tasks into their cgroups through a "yard": a
// directory with one mount of each hierarchy the images name (cgroup2:
// `unified`). Without `cgroup_yard` it makes its own at the start of every
// restore (mkdtemp, a tmpfs, a fresh cgroup2 mount in it) and tears it down
// at the end: 21 ms of a migration's frozen window in a profiled TCG guest,
// and the new cgroup2 mount, taking no options, resets those of the host's
// cgroup2 superblock (nsdelegate, memory_recursiveprot) for everyone. Given
// a yard that has `unified` already, CRIU mounts nothing and leaves the
// yard alone (criu/cgroup.c, prepare_cgroup_sfd, fini_cgroup).
//
// This yard is a directory holding a private bind mount of the host's
// cgroup2 mount at `unified`: the same hierarchy CRIU's own mount would
// show, from its root, with nothing of the superblock touched. The
// prepared restore makes it before the images are read (a migration's:
// while the container still runs on the source) and removes it once CRIU
// is done. A restore whose images name other hierarchies (from a cgroup v1
// host) has CRIU mount those in the yard as before; they are detached
// with it.
#pragma once
#include <string>

namespace crx::checkpoint {

class CgroupYard {
 public:
  // dir: made here (its parent exists), empty; cgroup2_mountpoint: where
  // the host mounts its cgroup2 hierarchy's root ("/sys/fs/cgroup").
  // Throws Error with the errno of the step that failed; nothing is left
  // then.
  CgroupYard(std::string dir, const std::string& cgroup2_mountpoint);
  ~CgroupYard();
  CgroupYard(const CgroupYard&) = delete;
  CgroupYard& operator=(const CgroupYard&) = delete;

  // CRIU's `cgroup_yard`.
  const std::string& path() const { return dir_; }

 private:
  void release() noexcept;
  std::string dir_;
};

}  // namespace crx::checkpoint
