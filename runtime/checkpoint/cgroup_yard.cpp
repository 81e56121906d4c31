#include "checkpoint/cgroup_yard.hpp"

#include <dirent.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <vector>

#include "common/error.hpp"
#include "common/log.hpp"

namespace crx::checkpoint {

CgroupYard::CgroupYard(std::string dir, const std::string& cgroup2_mountpoint)
    : dir_(std::move(dir)) {
  if (::mkdir(dir_.c_str(), 0700) != 0) throw_errno("cgroup yard: mkdir " + dir_);
  const std::string unified = dir_ + "/unified";
  try {
    if (::mkdir(unified.c_str(), 0700) != 0) throw_errno("cgroup yard: mkdir " + unified);
    if (::mount(cgroup2_mountpoint.c_str(), unified.c_str(), nullptr, MS_BIND, nullptr) != 0)
      throw_errno("cgroup yard: bind " + cgroup2_mountpoint + " on " + unified);
    // Private: it must not join the host's peer groups (as StagedTmpfs).
    if (::mount(nullptr, unified.c_str(), nullptr, MS_PRIVATE, nullptr) != 0)
      throw_errno("cgroup yard: make " + unified + " private");
  } catch (...) {
    release();
    throw;
  }
}

CgroupYard::~CgroupYard() { release(); }

void CgroupYard::release() noexcept {
  if (dir_.empty()) return;
  // `unified`, and whatever CRIU mounted beside it: each detached, then
  // removed with rmdir only. rmdir fails on a mount point, so a detach that
  // failed never lets the removal reach into a cgroup hierarchy.
  std::vector<std::string> entries;
  if (std::unique_ptr<DIR, int (*)(DIR*)> d(::opendir(dir_.c_str()), ::closedir); d) {
    while (dirent* e = ::readdir(d.get())) {
      std::string name = e->d_name;
      if (name != "." && name != "..") entries.push_back(dir_ + "/" + name);
    }
  }
  for (const auto& at : entries) {
    if (::umount2(at.c_str(), MNT_DETACH) != 0 && errno != EINVAL)
      log::warn("restore: detach " + at + ": " + std::strerror(errno));
    if (::rmdir(at.c_str()) != 0) log::warn("restore: remove " + at + ": " + std::strerror(errno));
  }
  if (::rmdir(dir_.c_str()) != 0 && errno != ENOENT)
    log::warn("restore: remove " + dir_ + ": " + std::strerror(errno));
  dir_.clear();
}

}  // namespace crx::checkpoint
