// The options of the host's cgroup2 superblock (nsdelegate, favordynmods,
// memory_recursiveprot, ...), kept across CRIU's runs.
//
// CRIU mounts cgroup2 with no options while it dumps a container's cgroup
// properties and while it prepares a restore's cgroup yard (criu/cgroup.c,
// 3.17; crx's restores give it a yard of their own where they can:
// checkpoint/cgroup_yard.hpp), and the kernel applies the options of a new
// cgroup2 mount to the whole hierarchy when the mounter is in the initial
// cgroup namespace (apply_cgroup_root_flags(), Linux 6.1). So after `crx checkpoint`,
// `crx restore` or a migration the host had lost them (seen in the test
// bed's guests): nsdelegate's delegation boundary, the memory protection
// of memory_recursiveprot, favordynmods' cheap cgroup moves. crx takes them
// before CRIU starts and puts them back once CRIU is done (SwrkSession,
// criu_rpc.cpp); meanwhile they are gone, and two crx processes whose CRIU
// runs overlap can still race.
#pragma once
#include <optional>
#include <string>
#include <vector>

namespace crx::cgroup {

class RootOptions {
 public:
  // The cgroup2 mount at /sys/fs/cgroup (or /sys/fs/cgroup/unified on the
  // hybrid layout) in mountinfo text; nullopt without one.
  static std::optional<RootOptions> parse(const std::string& mountinfo_text);
  // This process's view now (/proc/self/mountinfo).
  static std::optional<RootOptions> of_host();
  // For a CRIU run of this process: the first of runs that overlap takes
  // of_host(), the others get that copy (the options before any of them
  // reset them); forgotten at the last one's release(), so that a
  // long-lived process (crx receive) takes them anew for its next run.
  static std::optional<RootOptions> acquire();
  static void release();

  const std::string& mountpoint() const { return mountpoint_; }
  // The superblock's options but rw/ro, in mountinfo's order.
  const std::vector<std::string>& options() const { return options_; }
  bool operator==(const RootOptions& o) const = default;

  // Reconfigures the hierarchy with these options (fspick(2) and
  // fsconfig(2): the mount's own flags stay) when its options differ now.
  // True if it had to; Error with the errno when the kernel refuses.
  bool put_back() const;

 private:
  std::string mountpoint_;
  std::vector<std::string> options_;
};

}  // namespace crx::cgroup
