// tmpfs mounts crx can make again on restore instead of having CRIU pack
// them: the empty read-only tmpfs crx mounts on masked directories
// (linux.maskedPaths) and the spec's tmpfs mounts (e.g. /dev/shm, /tmp).
// CRIU packs every tmpfs it dumps with `tar --gzip` and unpacks it on
// restore: a helper process each way, which costs 1-3 s per mount under
// TCG, all of it inside a migration's downtime.
//
// Dump: such a mount becomes a CRIU external mount named
// "crx-tmpfs:<destination>" (checked while the container is frozen). One
// that holds files has them packed by crx into the images dir
// (carried_tmpfs.hpp); one crx does not carry is left to CRIU. Restore:
// crx mounts a fresh tmpfs with the same flags and data for every candidate
// under the state dir, fills it from the images dir's archive if there is
// one, CRIU binds it in under that name, and crx detaches its own mount
// afterwards, so the container again has a tmpfs of its own there.
// Images from before (without these names) restore as before: unused names
// are ignored by CRIU.
#pragma once
#include <sys/types.h>

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "checkpoint/criu_options.hpp"
#include "spec/spec.hpp"

namespace crx::checkpoint {

// A tmpfs crx mounted for the spec.
struct TmpfsMount {
  std::string destination;  // inside the container
  std::string source;       // shown in mountinfo: "tmpfs", "shm", ...
  unsigned long flags = 0;  // MS_* (MS_RDONLY for masked directories)
  std::string data;         // tmpfs options: "mode=1777,size=65536k", ...
};

// The name CRIU records for a recreated mount.
std::string recreated_mount_name(const std::string& destination);

// Masked directories (read-only, no data) and the spec's tmpfs mounts other
// than /dev (which crx fills with devices) and bind mounts.
std::vector<TmpfsMount> recreatable_tmpfs(const spec::Spec& s);

// One line of /proc/PID/mountinfo: mount point (unescaped, relative to the
// process's root) and file-system type.
struct MountPoint {
  std::string path;
  std::string fstype;
};
std::vector<MountPoint> parse_mount_points(const std::string& mountinfo);

// The candidates that may be external: exactly one tmpfs mounted at the
// destination, and is_empty(destination) or, for one that is not
// read-only, carry(destination) (its contents packed). Why others are not
// is logged at debug level.
std::vector<ExternalMount> choose_recreated_mounts(
    const std::vector<TmpfsMount>& candidates, const std::vector<MountPoint>& mounts,
    const std::function<bool(const std::string&)>& is_empty,
    const std::function<bool(const std::string&)>& carry);

// The same for a running container process (its mountinfo and root); call
// it while the container is frozen, so nothing lands in a mount after the
// check. With `images_dir`, a tmpfs holding files is packed there
// (carried_tmpfs.hpp); without, only empty ones are chosen. Unreadable or
// odd paths are left to CRIU.
std::vector<ExternalMount> recreated_dump_mounts(const spec::Spec& s, pid_t pid,
                                                 const std::string& images_dir);
// Its choice made ahead, while the container runs, for a request that is
// checked against the frozen choice later: nothing is packed, and a tmpfs
// that holds files counts as one crx will carry (when it cannot, the
// frozen choice differs and the request sent ahead is not used).
std::vector<ExternalMount> recreated_dump_mounts_ahead(const spec::Spec& s, pid_t pid);

// Restore: a fresh tmpfs for every candidate and a /dev as crx makes it
// (recreated_dev.hpp), mounted (private) under `dir`; ext_mounts() maps the dump's names to them. The destructor
// detaches them and removes `dir`: what CRIU bound into the container stays.
class StagedTmpfs {
 public:
  StagedTmpfs(const spec::Spec& s, std::string dir);
  ~StagedTmpfs();
  StagedTmpfs(const StagedTmpfs&) = delete;
  StagedTmpfs& operator=(const StagedTmpfs&) = delete;
  const std::vector<ExternalMount>& ext_mounts() const { return ext_; }
  // Fills each staged tmpfs whose contents the dump carried (an archive in
  // images_dir); call it once the images are there, before CRIU runs.
  void fill(const std::string& images_dir) const;

 private:
  void release() noexcept;
  std::string dir_;
  std::vector<std::pair<std::string, std::string>> staged_;  // destination, mount
  std::vector<std::string> mounted_;
  std::vector<ExternalMount> ext_;
};

}  // namespace crx::checkpoint
