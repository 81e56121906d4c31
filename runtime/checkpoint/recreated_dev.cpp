#include "checkpoint/recreated_dev.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <sstream>

#include "common/error.hpp"
#include "common/fs.hpp"
#include "common/log.hpp"
#include "common/unique_fd.hpp"
#include "linux/devices.hpp"
#include "linux/mount_options.hpp"
#include "linux/paths.hpp"

namespace crx::checkpoint {
namespace {

bool under_dev(const std::string& dest) { return dest.rfind("/dev/", 0) == 0; }

void walk(int fd, const std::string& rel, dev_t top, std::vector<DevEntry>& out) {
  UniqueFd own(::dup(fd));
  if (!own) throw_errno("dup");
  DIR* d = ::fdopendir(own.get());
  if (!d) throw_errno("list /dev/" + rel);
  own.release();
  std::vector<std::string> names;
  errno = 0;
  while (struct dirent* e = ::readdir(d)) {
    if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0)
      names.emplace_back(e->d_name);
  }
  int err = errno;
  ::closedir(d);
  if (err) throw Error("list /dev/" + rel + ": " + std::strerror(err));
  for (const auto& n : names) {
    struct stat st{};
    std::string path = rel.empty() ? n : rel + "/" + n;
    if (::fstatat(fd, n.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) throw_errno("stat /dev/" + path);
    DevEntry e;
    e.path = path;
    e.mode = st.st_mode;
    e.uid = st.st_uid;
    e.gid = st.st_gid;
    e.mount_point = st.st_dev != top;
    if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)) e.rdev = st.st_rdev;
    if (S_ISREG(st.st_mode)) e.size = st.st_size;
    if (S_ISLNK(st.st_mode)) {
      char buf[4096];
      ssize_t len = ::readlinkat(fd, n.c_str(), buf, sizeof buf);
      if (len < 0) throw_errno("readlink /dev/" + path);
      e.target.assign(buf, static_cast<size_t>(len));
    }
    out.push_back(e);
    if (S_ISDIR(st.st_mode) && !e.mount_point) {
      UniqueFd sub(::openat(fd, n.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
      if (!sub) throw_errno("open /dev/" + path);
      walk(sub.get(), path, top, out);
    }
  }
}

std::string describe(const DevEntry& e) {
  std::ostringstream s;
  s << "/dev/" << e.path << " (mode " << std::oct << e.mode << std::dec << ", owner " << e.uid
    << ":" << e.gid;
  if (e.rdev) s << ", device " << major(e.rdev) << ":" << minor(e.rdev);
  if (!e.target.empty()) s << ", -> " << e.target;
  if (e.size) s << ", " << e.size << " bytes";
  if (e.mount_point) s << ", a mount point";
  s << ")";
  return s.str();
}

bool same(const DevEntry& a, const DevEntry& expected) {
  // Only directories: a file bound over a node is made as a file by crx, and
  // what a relative bind source is cannot be told here.
  if (a.mount_point) return S_ISDIR(a.mode) && S_ISDIR(expected.mode);
  return a.mode == expected.mode && a.uid == expected.uid && a.gid == expected.gid &&
         a.rdev == expected.rdev && a.size == expected.size && a.target == expected.target;
}

// The mountinfo of pid has exactly one tmpfs at /dev.
bool dev_is_one_tmpfs(pid_t pid) {
  int n = 0;
  bool tmpfs = false;
  for (const auto& m : parse_mount_points(read_file("/proc/" + std::to_string(pid) + "/mountinfo"))) {
    if (m.path != "/dev") continue;
    ++n;
    tmpfs = m.fstype == "tmpfs";
  }
  return n == 1 && tmpfs;
}

UniqueFd open_in_root(const std::string& root, const std::string& path) {
  UniqueFd rfd(::open(root.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!rfd) throw_errno("open " + root);
  struct open_how how{};
  how.flags = O_RDONLY | O_DIRECTORY | O_CLOEXEC;
  how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS;
  std::string rel = path.substr(1);
  UniqueFd fd(static_cast<int>(::syscall(SYS_openat2, rfd.get(), rel.c_str(), &how, sizeof how)));
  if (!fd) throw_errno("open " + path + " in " + root);
  return fd;
}

// A scratch tmpfs holding what crx makes; gone with the object.
class ScratchDev {
 public:
  ScratchDev(const std::string& dir, const spec::Spec& s, const TmpfsMount& dev) : dir_(dir) {
    mkdir_p(dir_, 0700);
    try {
      make_dev(dir_, s, dev);
    } catch (...) {
      cleanup();
      throw;
    }
  }
  ~ScratchDev() { cleanup(); }
  std::string dev() const { return dir_ + "/dev"; }

 private:
  void cleanup() noexcept {
    ::umount2((dir_ + "/dev").c_str(), MNT_DETACH);
    try {
      remove_tree(dir_);
    } catch (const std::exception& e) {
      log::warn(std::string("checkpoint: ") + e.what());
    }
  }
  std::string dir_;
};

}  // namespace

std::optional<TmpfsMount> dev_tmpfs(const spec::Spec& s) {
  if (s.linux.find_namespace("user")) return std::nullopt;
  for (const auto& m : s.mounts) {
    if (m.type != "tmpfs" || paths::clean(m.destination) != "/dev") continue;
    auto o = mounts::parse_mount_options(m.options);
    if (o.bind) return std::nullopt;
    return TmpfsMount{"/dev", m.source.empty() ? "tmpfs" : m.source,
                      o.flags & ~(MS_BIND | MS_REC | MS_REMOUNT), o.data};
  }
  return std::nullopt;
}

void make_dev(const std::string& root, const spec::Spec& s, const TmpfsMount& dev) {
  std::string at = root + "/dev";
  mkdir_p(at, 0755);
  if (::mount(dev.source.c_str(), at.c_str(), "tmpfs", dev.flags,
              dev.data.empty() ? nullptr : dev.data.c_str()) != 0)
    throw_errno("mount tmpfs (" + dev.data + ") on " + at);
  // As create does: the mount points below /dev (rootfs::mount_one), then
  // the devices, then the symlinks (which look for /dev/pts).
  for (const auto& m : s.mounts) {
    std::string dest = paths::clean(m.destination);
    if (!under_dev(dest)) continue;
    std::string target = paths::secure_join(root, dest);
    auto o = mounts::parse_mount_options(m.options);
    struct stat st{};
    bool file_bind = (o.bind || m.type == "bind") && ::stat(m.source.c_str(), &st) == 0 &&
                     !S_ISDIR(st.st_mode);
    if (file_bind) {
      mkdir_p(target.substr(0, target.rfind('/')));
      write_file(target, "", 0644);
    } else {
      mkdir_p(target);
    }
  }
  devices::create_devices(root, s.linux.devices, false);
  devices::create_dev_symlinks(root);
}

std::vector<DevEntry> list_dev_tree(int dir_fd) {
  struct stat st{};
  if (::fstat(dir_fd, &st) != 0) throw_errno("stat /dev");
  std::vector<DevEntry> out;
  DevEntry top;
  top.mode = st.st_mode;
  top.uid = st.st_uid;
  top.gid = st.st_gid;
  out.push_back(top);
  walk(dir_fd, "", st.st_dev, out);
  std::sort(out.begin(), out.end(),
            [](const DevEntry& a, const DevEntry& b) { return a.path < b.path; });
  return out;
}

std::string dev_difference(const std::vector<DevEntry>& actual,
                           const std::vector<DevEntry>& expected) {
  size_t i = 0, j = 0;
  std::string skip;  // a mount point's subtree in `expected`
  while (i < actual.size() || j < expected.size()) {
    if (j < expected.size() && !skip.empty() && expected[j].path.rfind(skip, 0) == 0) {
      ++j;
      continue;
    }
    if (j == expected.size() || (i < actual.size() && actual[i].path < expected[j].path))
      return "not made by crx: " + describe(actual[i]);
    if (i == actual.size() || expected[j].path < actual[i].path)
      return "missing: " + describe(expected[j]);
    if (!same(actual[i], expected[j]))
      return describe(actual[i]) + " is " + describe(expected[j]) + " when crx makes it";
    skip = actual[i].mount_point ? actual[i].path + "/" : std::string();
    ++i;
    ++j;
  }
  return "";
}

std::optional<std::vector<DevEntry>> expected_dev_tree(const spec::Spec& s,
                                                       const std::string& scratch) {
  auto dev = dev_tmpfs(s);
  if (!dev) return std::nullopt;
  ScratchDev made(scratch, s, *dev);
  UniqueFd fd(::open(made.dev().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd) throw_errno("open " + made.dev());
  return list_dev_tree(fd.get());
}

std::optional<ExternalMount> recreated_dev_mount(
    pid_t pid, const std::optional<std::vector<DevEntry>>& expected) {
  if (!expected) return std::nullopt;
  try {
    if (!dev_is_one_tmpfs(pid)) {
      log::debug("checkpoint: /dev is not exactly one tmpfs mount; CRIU dumps it");
      return std::nullopt;
    }
    UniqueFd actual = open_in_root("/proc/" + std::to_string(pid) + "/root", "/dev");
    std::string diff = dev_difference(list_dev_tree(actual.get()), *expected);
    if (!diff.empty()) {
      log::debug("checkpoint: the container's /dev is not what crx makes, CRIU dumps it: " + diff);
      return std::nullopt;
    }
  } catch (const std::exception& e) {
    log::debug(std::string("checkpoint: /dev not compared, CRIU dumps it: ") + e.what());
    return std::nullopt;
  }
  return ExternalMount{"/dev", recreated_mount_name("/dev")};
}

}  // namespace crx::checkpoint
