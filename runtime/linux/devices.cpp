#include "linux/devices.hpp"

#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>

#include "common/error.hpp"
#include "common/fs.hpp"
#include "common/unique_fd.hpp"
#include "linux/paths.hpp"

namespace crx::devices {

const std::vector<spec::Device>& default_devices() {
  static const std::vector<spec::Device> devs = [] {
    std::vector<spec::Device> v;
    auto add = [&](const char* path, int64_t major, int64_t minor) {
      spec::Device d;
      d.path = path;
      d.type = 'c';
      d.major = major;
      d.minor = minor;
      d.file_mode = 0666;
      d.uid = 0;
      d.gid = 0;
      v.push_back(d);
    };
    add("/dev/null", 1, 3);
    add("/dev/zero", 1, 5);
    add("/dev/full", 1, 7);
    add("/dev/random", 1, 8);
    add("/dev/urandom", 1, 9);
    add("/dev/tty", 5, 0);
    return v;
  }();
  return devs;
}

namespace {

mode_t node_type(char t) {
  switch (t) {
    case 'b': return S_IFBLK;
    case 'p': return S_IFIFO;
    default: return S_IFCHR;
  }
}

void create_one(const std::string& rootfs, const spec::Device& d, bool in_userns) {
  std::string dest = paths::secure_join(rootfs, d.path);
  mkdir_p(dest.substr(0, dest.rfind('/')));
  if (in_userns) {
    // mknod is not allowed: bind the host's node over an empty file.
    if (!path_exists(dest)) {
      UniqueFd fd(::open(dest.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0644));
      if (!fd) throw_errno("create device placeholder " + dest);
    }
    if (::mount(d.path.c_str(), dest.c_str(), nullptr, MS_BIND, nullptr) != 0)
      throw_errno("bind device " + d.path + " to " + dest);
    return;
  }
  ::unlink(dest.c_str());
  mode_t mode = (d.file_mode ? *d.file_mode : 0666) & 07777;
  if (::mknod(dest.c_str(), mode | node_type(d.type),
              makedev(static_cast<unsigned>(d.major), static_cast<unsigned>(d.minor))) != 0)
    throw_errno("mknod " + dest);
  if (::chmod(dest.c_str(), mode) != 0) throw_errno("chmod " + dest);
  if (::chown(dest.c_str(), d.uid.value_or(0), d.gid.value_or(0)) != 0) throw_errno("chown " + dest);
}

}  // namespace

void create_devices(const std::string& rootfs, const std::vector<spec::Device>& listed, bool in_userns) {
  for (const auto& d : default_devices()) {
    bool overridden = false;
    for (const auto& l : listed) overridden = overridden || l.path == d.path;
    if (!overridden) create_one(rootfs, d, in_userns);
  }
  for (const auto& d : listed) create_one(rootfs, d, in_userns);
}

void create_dev_symlinks(const std::string& rootfs) {
  const std::pair<const char*, const char*> links[] = {
      {"/proc/self/fd", "/dev/fd"},         {"/proc/self/fd/0", "/dev/stdin"},
      {"/proc/self/fd/1", "/dev/stdout"},   {"/proc/self/fd/2", "/dev/stderr"},
  };
  for (const auto& [target, link] : links) {
    std::string path = rootfs + link;
    if (::symlink(target, path.c_str()) != 0 && errno != EEXIST) throw_errno("symlink " + path);
  }
  if (path_exists("/proc/kcore")) {
    std::string core = rootfs + "/dev/core";
    if (::symlink("/proc/kcore", core.c_str()) != 0 && errno != EEXIST) throw_errno("symlink " + core);
  }
  // /dev/ptmx must be the container's own devpts instance.
  std::string ptmx = rootfs + "/dev/ptmx";
  if (path_exists(rootfs + "/dev/pts")) {
    ::unlink(ptmx.c_str());
    if (::symlink("pts/ptmx", ptmx.c_str()) != 0) throw_errno("symlink " + ptmx);
  }
}

}  // namespace crx::devices
