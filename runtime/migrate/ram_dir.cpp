#include "migrate/ram_dir.hpp"

#include <dirent.h>
#include <linux/magic.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/vfs.h>

#include "common/error.hpp"
#include "common/fs.hpp"

namespace crx::migrate {

bool is_on_tmpfs(const std::string& path) {
  struct statfs s{};
  if (::statfs(path.c_str(), &s) != 0) return false;
  return s.f_type == TMPFS_MAGIC || s.f_type == RAMFS_MAGIC;
}

RamDir::RamDir(std::string path) : path_(std::move(path)) {
  mkdir_p(path_, 0700);
  if (is_on_tmpfs(path_)) return;
  if (::mount("crx-migrate", path_.c_str(), "tmpfs", MS_NOSUID | MS_NODEV, "mode=0700") != 0)
    throw_errno("mount tmpfs on " + path_ + " (images are kept in RAM)");
  mounted_ = true;
}

RamDir::~RamDir() {
  if (mounted_) ::umount2(path_.c_str(), MNT_DETACH);
}

uint64_t page_image_bytes(const std::string& round_dir) {
  uint64_t total = 0;
  DIR* d = ::opendir(round_dir.c_str());
  if (!d) return 0;
  while (struct dirent* e = ::readdir(d)) {
    std::string n = e->d_name;
    if (n.rfind("pages-", 0) != 0) continue;
    struct stat st{};
    if (::stat((round_dir + "/" + n).c_str(), &st) == 0) total += static_cast<uint64_t>(st.st_size);
  }
  ::closedir(d);
  return total;
}

}  // namespace crx::migrate
