// The container's /dev tmpfs, made again by crx on restore instead of
// packed by CRIU (see recreated_mounts.hpp for why): crx fills /dev itself
// at create (devices.hpp: default and spec devices, symlinks, the mount
// points of /dev/pts, /dev/shm, /dev/mqueue). Before the freeze crx builds
// that /dev afresh in a scratch tmpfs and lists it (expected_dev_tree: it
// depends on the spec alone, and took 30-60 ms of a TCG guest's frozen
// window); at dump time it compares the list entry by entry with the
// frozen container's /dev (type, mode, owner, device number, link target;
// file contents must be empty); only when they are the same is /dev an external
// mount "crx-tmpfs:/dev". Anything the application added or changed keeps
// CRIU's tar (said at debug level). The mounts below /dev are restored by
// CRIU on top of the new /dev as before. Not for containers with a user
// namespace (their devices are bind mounts).
#pragma once
#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "checkpoint/criu_options.hpp"
#include "checkpoint/recreated_mounts.hpp"
#include "spec/spec.hpp"

namespace crx::checkpoint {

// The spec's /dev tmpfs, when crx mounts one and fills it with mknod.
std::optional<TmpfsMount> dev_tmpfs(const spec::Spec& s);

// Mounts the /dev tmpfs at <root>/dev and fills it as crx's create does.
// The caller unmounts <root>/dev.
void make_dev(const std::string& root, const spec::Spec& s, const TmpfsMount& dev);

// One entry of a /dev tree, path relative to /dev ("" for /dev itself).
struct DevEntry {
  std::string path;
  mode_t mode = 0;  // type and permission bits
  uid_t uid = 0;
  gid_t gid = 0;
  dev_t rdev = 0;
  off_t size = 0;
  std::string target;       // symlinks
  bool mount_point = false;  // another file system is mounted here
};

// Lists the tree under dir_fd (not below mount points), sorted by path.
std::vector<DevEntry> list_dev_tree(int dir_fd);

// "" when `actual` is what crx makes (`expected`); else the first
// difference, for the log. A directory mount point in `actual` matches a
// directory in `expected` (what was mounted there is CRIU's business).
std::string dev_difference(const std::vector<DevEntry>& actual,
                           const std::vector<DevEntry>& expected);

// What crx's create puts into the spec's /dev tmpfs, as list_dev_tree()
// gives it: made in scratch (a directory crx may use, and removes) and
// listed. nullopt when crx mounts no /dev tmpfs for s. Taken before the
// container freezes: it depends on the spec alone. Throws Error.
std::optional<std::vector<DevEntry>> expected_dev_tree(const spec::Spec& s,
                                                       const std::string& scratch);

// For a frozen container: "/dev" as external mount if its /dev is
// `expected` (expected_dev_tree() of its spec; nullopt: CRIU dumps /dev).
std::optional<ExternalMount> recreated_dev_mount(pid_t pid,
                                                 const std::optional<std::vector<DevEntry>>& expected);

}  // namespace crx::checkpoint
