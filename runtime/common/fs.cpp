#include "common/fs.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdint>
#include <memory>

#include "common/error.hpp"
#include "common/retry_eintr.hpp"
#include "common/unique_fd.hpp"

namespace crx {

namespace {

std::string read_all(int fd, const std::string& path) {
  std::string out;
  char buf[8192];
  for (;;) {
    ssize_t n = retry_eintr([&] { return ::read(fd, buf, sizeof buf); });
    if (n < 0) throw_errno("read " + path);
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

}  // namespace

std::string read_file(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) throw_errno("open " + path);
  return read_all(fd.get(), path);
}

std::optional<std::string> read_file_if_present(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) return std::nullopt;
  return read_all(fd.get(), path);
}

static void write_all(int fd, std::string_view data, const std::string& path) {
  while (!data.empty()) {
    ssize_t n = retry_eintr([&] { return ::write(fd, data.data(), data.size()); });
    if (n < 0) throw_errno("write " + path);
    data.remove_prefix(static_cast<size_t>(n));
  }
}

void write_file(const std::string& path, std::string_view data, mode_t mode) {
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode));
  if (!fd) throw_errno("open " + path);
  write_all(fd.get(), data, path);
}

void write_file_atomic(const std::string& path, std::string_view data, mode_t mode) {
  std::string tmp = path + ".tmp." + std::to_string(::getpid());
  {
    UniqueFd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode));
    if (!fd) throw_errno("open " + tmp);
    try {
      write_all(fd.get(), data, tmp);
    } catch (...) {
      ::unlink(tmp.c_str());
      throw;
    }
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    throw_errno("rename " + tmp + " to " + path, err);
  }
}

namespace {

bool is_directory(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// path without trailing slashes ("/" stays "/").
std::string without_trailing_slashes(std::string path) {
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  return path;
}

}  // namespace

void mkdir_p(const std::string& path, mode_t mode) {
  const std::string dir = without_trailing_slashes(path);
  if (dir.empty()) throw Error("create directory: the path is empty", EINVAL);
  int err = ::mkdir(dir.c_str(), mode) == 0 ? 0 : errno;
  if (err == ENOENT) {  // its parent first
    auto slash = dir.rfind('/');
    if (slash == std::string::npos || slash == 0) throw_errno("create directory " + dir, err);
    mkdir_p(dir.substr(0, slash), mode);
    err = ::mkdir(dir.c_str(), mode) == 0 ? 0 : errno;
  }
  if (err == EEXIST) {  // there already (or made by someone else since)
    if (is_directory(dir)) return;
    throw_errno("create directory " + dir, ENOTDIR);
  }
  if (err != 0) throw_errno("create directory " + dir, err);
  // The mode exactly, whatever the umask took from it.
  if (::chmod(dir.c_str(), mode) != 0) throw_errno("chmod " + dir);
}

bool path_exists(const std::string& path) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0;
}

namespace {

// The mount that name in dirfd (not followed if a symlink; dirfd itself if
// name is "") is on, from statx.
uint64_t mount_id_at(int dirfd, const char* name, const std::string& path) {
  struct statx stx {};
  int flags = AT_SYMLINK_NOFOLLOW | AT_NO_AUTOMOUNT | (*name ? 0 : AT_EMPTY_PATH);
  if (::statx(dirfd, name, flags, STATX_MNT_ID, &stx) != 0)
    throw_errno("statx " + path);
  if (!(stx.stx_mask & STATX_MNT_ID))
    throw Error("statx " + path + ": this kernel reports no mount id", Cause::Unsupported);
  return stx.stx_mnt_id;
}

// Empties the directory open at dirfd (path names it in errors), not
// entering a directory on another mount than mnt_id.
void remove_below(int dirfd, const std::string& path, uint64_t mnt_id) {
  int dup_fd = ::fcntl(dirfd, F_DUPFD_CLOEXEC, 0);
  if (dup_fd < 0) throw_errno("dup " + path);
  DIR* d = ::fdopendir(dup_fd);
  if (!d) {
    int err = errno;
    ::close(dup_fd);
    throw_errno("open directory " + path, err);
  }
  std::unique_ptr<DIR, int (*)(DIR*)> dir(d, ::closedir);
  for (;;) {
    errno = 0;
    dirent* e = ::readdir(d);
    if (!e) {
      if (errno != 0) throw_errno("read directory " + path);
      break;
    }
    std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    const std::string child = path + "/" + name;
    if (::unlinkat(dirfd, name.c_str(), 0) == 0) continue;
    if (errno != EISDIR) throw_errno("remove " + child);
    if (mount_id_at(dirfd, name.c_str(), child) != mnt_id)
      throw Error("remove " + child + ": a mount point; not entering it", Cause::Busy, EBUSY);
    UniqueFd sub(::openat(dirfd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!sub) throw_errno("open " + child);
    remove_below(sub.get(), child, mnt_id);
    if (::unlinkat(dirfd, name.c_str(), AT_REMOVEDIR) != 0) throw_errno("remove " + child);
  }
}

}  // namespace

void remove_tree(const std::string& path) {
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return;
    throw_errno("remove " + path);
  }
  if (!S_ISDIR(st.st_mode)) {
    if (::unlink(path.c_str()) != 0 && errno != ENOENT) throw_errno("remove " + path);
    return;
  }
  UniqueFd dir(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!dir) throw_errno("open " + path);
  remove_below(dir.get(), path, mount_id_at(dir.get(), "", path));
  if (::rmdir(path.c_str()) != 0) throw_errno("remove " + path);
}

std::string executable_directory() {
  char buf[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return {};
  std::string path(buf, static_cast<size_t>(n));
  auto slash = path.rfind('/');
  return slash == std::string::npos ? std::string() : path.substr(0, slash);
}

}  // namespace crx
