#include "checkpoint/recreated_mounts.hpp"

#include "checkpoint/carried_tmpfs.hpp"
#include "checkpoint/recreated_dev.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>

#include "common/error.hpp"
#include "common/fs.hpp"
#include "common/log.hpp"
#include "common/unique_fd.hpp"
#include "linux/mount_options.hpp"
#include "linux/paths.hpp"

namespace crx::checkpoint {
namespace {

// mountinfo escapes space, tab, newline and backslash as \ooo.
std::string unescape_octal(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size()) {
      const char* d = s.c_str() + i + 1;
      if (d[0] >= '0' && d[0] <= '3' && d[1] >= '0' && d[1] <= '7' && d[2] >= '0' && d[2] <= '7') {
        out += static_cast<char>((d[0] - '0') * 64 + (d[1] - '0') * 8 + (d[2] - '0'));
        i += 3;
        continue;
      }
    }
    out += s[i];
  }
  return out;
}

std::vector<std::string> split_spaces(const std::string& line) {
  std::vector<std::string> f;
  size_t i = 0;
  while (i < line.size()) {
    while (i < line.size() && line[i] == ' ') ++i;
    size_t j = line.find(' ', i);
    if (j == std::string::npos) j = line.size();
    if (j > i) f.push_back(line.substr(i, j - i));
    i = j;
  }
  return f;
}

// The directory `path` (absolute, inside the process's root), resolved
// inside that root (symlinks cannot lead out); -1 (errno set) otherwise.
UniqueFd open_dir_in(int root_fd, const std::string& path) {
  struct open_how how{};
  how.flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC;
  how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS;
  std::string rel = path.size() > 1 ? path.substr(1) : ".";
  return UniqueFd(static_cast<int>(::syscall(SYS_openat2, root_fd, rel.c_str(), &how, sizeof how)));
}

// True when `path` (absolute, inside the process's root) is a directory
// with no entries.
bool dir_is_empty_in(int root_fd, const std::string& path) {
  UniqueFd fd = open_dir_in(root_fd, path);
  if (!fd) return false;
  DIR* d = ::fdopendir(fd.get());
  if (!d) return false;
  fd.release();  // the DIR owns it now
  bool empty = true;
  errno = 0;
  while (struct dirent* e = ::readdir(d)) {
    if (std::strcmp(e->d_name, ".") == 0 || std::strcmp(e->d_name, "..") == 0) continue;
    empty = false;
    break;
  }
  if (errno != 0) empty = false;
  ::closedir(d);
  return empty;
}

constexpr const char* kNamePrefix = "crx-tmpfs:";

// Packs the tmpfs at `path` (inside the process's root) into the images
// dir (carried_tmpfs.hpp). False, logged, when crx does not carry it.
bool carry_contents(int root_fd, const std::string& path, const std::string& images_dir) {
  UniqueFd dir = open_dir_in(root_fd, path);
  if (!dir) {
    log::debug("checkpoint: cannot open " + path + ": " + std::strerror(errno));
    return false;
  }
  try {
    auto why_not = pack_tmpfs("/proc/self/fd/" + std::to_string(dir.get()), images_dir,
                              carried_tmpfs_file(path));
    if (why_not) log::debug("checkpoint: " + path + ": " + *why_not);
    return !why_not;
  } catch (const Error& e) {
    log::debug("checkpoint: packing " + path + ": " + e.what());
    return false;
  }
}

}  // namespace

std::string recreated_mount_name(const std::string& destination) {
  return kNamePrefix + destination;
}

std::vector<TmpfsMount> recreatable_tmpfs(const spec::Spec& s) {
  std::vector<TmpfsMount> out;
  for (const auto& p : s.linux.masked_paths) {
    // Files are masked with /dev/null binds (external mounts already); a
    // candidate that turns out not to be a tmpfs is dropped at dump time.
    out.push_back({paths::clean(p), "tmpfs", MS_RDONLY, ""});
  }
  for (const auto& m : s.mounts) {
    if (m.type != "tmpfs") continue;
    std::string dest = paths::clean(m.destination);
    if (dest == "/dev") continue;
    auto o = mounts::parse_mount_options(m.options);
    if (o.bind) continue;
    unsigned long flags = o.flags & ~(MS_BIND | MS_REC | MS_REMOUNT);
    out.push_back({dest, m.source.empty() ? "tmpfs" : m.source, flags, o.data});
  }
  return out;
}

std::vector<MountPoint> parse_mount_points(const std::string& mountinfo) {
  std::vector<MountPoint> out;
  size_t pos = 0;
  while (pos < mountinfo.size()) {
    size_t nl = mountinfo.find('\n', pos);
    std::string line = mountinfo.substr(pos, nl == std::string::npos ? std::string::npos : nl - pos);
    pos = nl == std::string::npos ? mountinfo.size() : nl + 1;
    auto f = split_spaces(line);
    // id parent major:minor root mountpoint options [optional...] - fstype source super
    size_t dash = 0;
    for (size_t i = 6; i < f.size(); ++i) {
      if (f[i] == "-") {
        dash = i;
        break;
      }
    }
    if (f.size() < 5 || dash == 0 || dash + 1 >= f.size()) continue;
    out.push_back({unescape_octal(f[4]), f[dash + 1]});
  }
  return out;
}

std::vector<ExternalMount> choose_recreated_mounts(
    const std::vector<TmpfsMount>& candidates, const std::vector<MountPoint>& mounts,
    const std::function<bool(const std::string&)>& is_empty,
    const std::function<bool(const std::string&)>& carry) {
  std::map<std::string, std::vector<std::string>> at;  // mount point -> fs types
  for (const auto& m : mounts) at[m.path].push_back(m.fstype);
  std::vector<ExternalMount> out;
  for (const auto& c : candidates) {
    auto it = at.find(c.destination);
    if (it == at.end()) continue;  // not mounted (a masked file, a missing path)
    if (it->second.size() != 1 || it->second[0] != "tmpfs") {
      log::debug("checkpoint: " + c.destination +
                 " is not exactly one tmpfs mount; CRIU dumps it");
      continue;
    }
    // A read-only tmpfs that holds files (remounted by the application?)
    // would need its staged copy made writable to be filled: CRIU's.
    if (!is_empty(c.destination) && ((c.flags & MS_RDONLY) || !carry(c.destination))) {
      log::debug("checkpoint: crx does not carry " + c.destination + "; CRIU dumps its contents");
      continue;
    }
    out.push_back({c.destination, recreated_mount_name(c.destination)});
  }
  return out;
}

namespace {

// choose_recreated_mounts for the process pid, carry(root of pid, path)
// deciding about a tmpfs that holds files.
std::vector<ExternalMount> recreated_mounts_of(
    const spec::Spec& s, pid_t pid, const std::function<bool(int, const std::string&)>& carry) {
  auto candidates = recreatable_tmpfs(s);
  if (candidates.empty()) return {};
  std::string proc = "/proc/" + std::to_string(pid);
  std::string mountinfo;
  try {
    mountinfo = read_file(proc + "/mountinfo");
  } catch (const Error& e) {
    log::debug(std::string("checkpoint: no recreated mounts: ") + e.what());
    return {};
  }
  UniqueFd root(::open((proc + "/root").c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!root) {
    log::debug("checkpoint: no recreated mounts: cannot open " + proc + "/root: " +
               std::strerror(errno));
    return {};
  }
  return choose_recreated_mounts(
      candidates, parse_mount_points(mountinfo),
      [&](const std::string& p) { return dir_is_empty_in(root.get(), p); },
      [&](const std::string& p) { return carry(root.get(), p); });
}

}  // namespace

std::vector<ExternalMount> recreated_dump_mounts(const spec::Spec& s, pid_t pid,
                                                 const std::string& images_dir) {
  return recreated_mounts_of(s, pid, [&](int root, const std::string& p) {
    return !images_dir.empty() && carry_contents(root, p, images_dir);
  });
}

std::vector<ExternalMount> recreated_dump_mounts_ahead(const spec::Spec& s, pid_t pid) {
  return recreated_mounts_of(s, pid, [](int, const std::string&) { return true; });
}

StagedTmpfs::StagedTmpfs(const spec::Spec& s, std::string dir) : dir_(std::move(dir)) {
  auto candidates = recreatable_tmpfs(s);
  auto dev = dev_tmpfs(s);
  if (candidates.empty() && !dev) return;
  try {
    mkdir_p(dir_, 0700);
    if (dev) {
      std::string root = dir_ + "/devroot";
      mkdir_p(root + "/dev", 0755);
      mounted_.push_back(root + "/dev");  // detached even if filling it fails
      make_dev(root, s, *dev);
      if (::mount(nullptr, (root + "/dev").c_str(), nullptr, MS_PRIVATE, nullptr) != 0)
        throw_errno("make " + root + "/dev private");
      ext_.push_back({recreated_mount_name("/dev"), root + "/dev"});
    }
    for (size_t i = 0; i < candidates.size(); ++i) {
      const auto& c = candidates[i];
      std::string at = dir_ + "/" + std::to_string(i);
      mkdir_p(at, 0700);
      if (::mount(c.source.c_str(), at.c_str(), "tmpfs", c.flags, c.data.empty() ? nullptr : c.data.c_str()) != 0)
        throw_errno("mount tmpfs (" + c.data + ") for " + c.destination + " on " + at);
      mounted_.push_back(at);
      // Private: CRIU's bind of it must not join the host's peer groups.
      if (::mount(nullptr, at.c_str(), nullptr, MS_PRIVATE, nullptr) != 0)
        throw_errno("make " + at + " private");
      ext_.push_back({recreated_mount_name(c.destination), at});
      staged_.emplace_back(c.destination, at);
    }
  } catch (...) {
    release();
    throw;
  }
}

StagedTmpfs::~StagedTmpfs() { release(); }

void StagedTmpfs::fill(const std::string& images_dir) const {
  for (const auto& [destination, at] : staged_) {
    std::string archive = images_dir + "/" + carried_tmpfs_file(destination);
    if (path_exists(archive)) unpack_tmpfs(archive, at);
  }
}

void StagedTmpfs::release() noexcept {
  for (const auto& at : mounted_) {
    if (::umount2(at.c_str(), MNT_DETACH) != 0)
      log::warn("restore: detach " + at + ": " + std::strerror(errno));
  }
  mounted_.clear();
  if (dir_.empty() || !path_exists(dir_)) return;
  try {
    remove_tree(dir_);
  } catch (const std::exception& e) {
    log::warn(std::string("restore: ") + e.what());
  }
}

}  // namespace crx::checkpoint
