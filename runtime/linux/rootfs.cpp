#include "linux/rootfs.hpp"

#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <map>
#include <sstream>

#include "common/error.hpp"
#include "common/fs.hpp"
#include "common/unique_fd.hpp"
#include "linux/devices.hpp"
#include "linux/mount_options.hpp"
#include "linux/paths.hpp"

namespace crx::rootfs {

namespace {

void do_mount(const std::string& src, const std::string& dst, const char* type, unsigned long flags,
              const std::string& data) {
  if (::mount(src.empty() ? nullptr : src.c_str(), dst.c_str(), type, flags,
              data.empty() ? nullptr : data.c_str()) != 0) {
    int err = errno;
    std::string what = "mount " + (src.empty() ? std::string("(none)") : src) + " on " + dst;
    if (type) what += std::string(" (type ") + type + ")";
    throw_errno(what, err);
  }
}

// Flags the kernel will not let a remount drop (locked in a user namespace).
unsigned long locked_flags(const std::string& path) {
  struct statvfs sv;
  if (::statvfs(path.c_str(), &sv) != 0) return 0;
  unsigned long f = 0;
  if (sv.f_flag & ST_NOSUID) f |= MS_NOSUID;
  if (sv.f_flag & ST_NODEV) f |= MS_NODEV;
  if (sv.f_flag & ST_NOEXEC) f |= MS_NOEXEC;
  if (sv.f_flag & ST_NOATIME) f |= MS_NOATIME;
  if (sv.f_flag & ST_NODIRATIME) f |= MS_NODIRATIME;
  if (sv.f_flag & ST_RELATIME) f |= MS_RELATIME;
  return f;
}

void remount_bind(const std::string& dst, unsigned long flags) {
  do_mount("", dst, nullptr, MS_BIND | MS_REMOUNT | flags | locked_flags(dst), "");
}

// A bind-mount target has the type of its source: directory or file.
void create_target(const std::string& dst, bool directory) {
  if (path_exists(dst)) return;
  mkdir_p(directory ? dst : dst.substr(0, dst.rfind('/')));
  if (!directory) {
    UniqueFd fd(::open(dst.c_str(), O_CREAT | O_WRONLY | O_CLOEXEC, 0644));
    if (!fd) throw_errno("create mount target " + dst);
  }
}

bool is_directory(const std::string& p) {
  struct stat st;
  return ::stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

struct CgroupHierarchy {
  std::string mount_point;  // host, e.g. /sys/fs/cgroup/memory
  std::string fstype;       // cgroup or cgroup2
  std::string super_options;
  std::string own_path;     // this process's cgroup in that hierarchy
};

std::vector<CgroupHierarchy> cgroup_hierarchies() {
  // own cgroup per hierarchy, keyed by controller list ("" for v2)
  std::map<std::string, std::string> own;
  std::istringstream cg(read_file("/proc/self/cgroup"));
  for (std::string line; std::getline(cg, line);) {
    auto a = line.find(':'), b = line.find(':', a + 1);
    if (a == std::string::npos || b == std::string::npos) continue;
    std::string ctrls = line.substr(a + 1, b - a - 1);
    if (ctrls.rfind("name=", 0) == 0) ctrls = ctrls.substr(5);
    own[ctrls] = line.substr(b + 1);
  }
  std::vector<CgroupHierarchy> out;
  std::istringstream mi(read_file("/proc/self/mountinfo"));
  for (std::string line; std::getline(mi, line);) {
    auto sep = line.find(" - ");
    if (sep == std::string::npos) continue;
    std::istringstream pre(line.substr(0, sep)), post(line.substr(sep + 3));
    std::string id, parent, devno, root, mp, fstype, source, super;
    pre >> id >> parent >> devno >> root >> mp;
    post >> fstype >> source >> super;
    if (fstype != "cgroup" && fstype != "cgroup2") continue;
    if (mp.rfind("/sys/fs/cgroup", 0) != 0) continue;
    CgroupHierarchy h{mp, fstype, super, "/"};
    if (fstype == "cgroup2") {
      h.own_path = own.count("") ? own[""] : "/";
    } else {
      for (auto& [ctrls, path] : own) {
        if (ctrls.empty()) continue;
        // the mount's super options list its controllers
        std::string first = ctrls.substr(0, ctrls.find(','));
        if (("," + super + ",").find("," + first + ",") != std::string::npos) h.own_path = path;
      }
    }
    out.push_back(h);
  }
  return out;
}

void mount_cgroup(const spec::Mount& /*m*/, const std::string& dst, const mounts::MountOptions& mo,
                  const Options& opts) {
  if (opts.enter_cgroup) opts.enter_cgroup();
  mkdir_p(dst);
  unsigned long flags = mo.flags & ~MS_RDONLY;
  auto hierarchies = cgroup_hierarchies();
  bool pure_v2 = hierarchies.size() == 1 && hierarchies[0].fstype == "cgroup2" &&
                 hierarchies[0].mount_point == "/sys/fs/cgroup";
  if (pure_v2) {
    if (opts.new_cgroupns) {
      do_mount("cgroup2", dst, "cgroup2", mo.flags, "");
    } else {
      do_mount(hierarchies[0].mount_point + hierarchies[0].own_path, dst, nullptr, MS_BIND | MS_REC, "");
      if (mo.flags & MS_RDONLY) remount_bind(dst, MS_RDONLY | flags);
    }
    return;
  }
  // v1 / hybrid: a tmpfs holding one directory per hierarchy.
  do_mount("tmpfs", dst, "tmpfs", flags, "mode=755");
  for (const auto& h : hierarchies) {
    std::string name = h.mount_point == "/sys/fs/cgroup" ? "unified" : h.mount_point.substr(15);
    std::string sub = dst + "/" + name;
    mkdir_p(sub);
    if (opts.new_cgroupns) {
      std::string data = h.fstype == "cgroup2" ? "" : h.super_options;
      // keep only controller names from the super options
      if (h.fstype == "cgroup") {
        std::string kept;
        std::istringstream so(h.super_options);
        for (std::string o; std::getline(so, o, ',');)
          if (o != "rw" && o != "ro") kept += (kept.empty() ? "" : ",") + o;
        data = kept;
      }
      do_mount(h.fstype, sub, h.fstype.c_str(), flags, data);
    } else {
      do_mount(h.mount_point + h.own_path, sub, nullptr, MS_BIND | MS_REC, "");
    }
    if (mo.flags & MS_RDONLY) remount_bind(sub, MS_RDONLY | flags);
  }
  // cpu -> cpu,cpuacct style aliases for combined hierarchies
  for (const auto& h : hierarchies) {
    std::string name = h.mount_point.substr(h.mount_point.rfind('/') + 1);
    if (name.find(',') == std::string::npos) continue;
    std::istringstream parts(name);
    for (std::string p; std::getline(parts, p, ',');) {
      std::string link = dst + "/" + p;
      if (!path_exists(link)) (void)::symlink(name.c_str(), link.c_str());
    }
  }
  if (mo.flags & MS_RDONLY) remount_bind(dst, MS_RDONLY | flags);
}

}  // namespace

void mount_one(const spec::Mount& m, const Options& opts) {
  auto mo = mounts::parse_mount_options(m.options);
  std::string dst = paths::secure_join(opts.rootfs, m.destination);
  if (m.type == "cgroup") return mount_cgroup(m, dst, mo, opts);

  if (mo.bind || m.type == "bind") {
    std::string src = m.source;
    if (!src.empty() && src[0] != '/') src = opts.bundle + "/" + src;
    create_target(dst, is_directory(src));
    do_mount(src, dst, nullptr, MS_BIND | (mo.recursive ? MS_REC : 0), "");
    unsigned long extra = mo.flags & ~(MS_REMOUNT);
    if (extra) remount_bind(dst, extra);
  } else {
    mkdir_p(dst);
    try {
      do_mount(m.source, dst, m.type.c_str(), mo.flags, mo.data);
    } catch (const Error&) {
      // sysfs cannot be mounted fresh without owning the network namespace:
      // fall back to a read-only bind of the host's /sys, as runc does.
      if (m.type != "sysfs" || !opts.in_userns) throw;
      do_mount("/sys", dst, nullptr, MS_BIND | MS_REC, "");
      remount_bind(dst, MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC);
    }
  }
  for (unsigned long p : mo.propagation) do_mount("", dst, nullptr, p, "");
}

namespace {

// pivot_root(2) fails (EINVAL) when the new root or the mount it sits on is
// shared, and a bind of the rootfs below a shared mount would show up in the
// mount namespaces that share it. So the mount holding the rootfs (the
// rootfs itself when it is a mount point, else the nearest mount above it)
// is made private, or slave when that propagation was asked for; the
// propagation asked for "/" is applied again after pivot_root
// (finish_rootfs). Unbindable works the same way: the bind of the rootfs
// is made from a mount that is no longer unbindable.
void unshare_rootfs_parent(const std::string& rootfs, unsigned long root_propagation) {
  unsigned long flags = (root_propagation & MS_SLAVE) ? MS_SLAVE : MS_PRIVATE;
  std::string path = rootfs;
  for (;;) {
    if (::mount(nullptr, path.c_str(), nullptr, flags, nullptr) == 0) return;
    int err = errno;
    // EINVAL: not a mount point; try the directory above.
    if (err != EINVAL || path == "/") throw_errno("set the propagation of the mount holding " + rootfs, err);
    auto slash = path.rfind('/');
    path = slash == 0 ? "/" : path.substr(0, slash);
  }
}

}  // namespace

void prepare_rootfs(const spec::Spec& spec, const Options& opts) {
  // Without a mount namespace of its own the container's mounts are made in
  // the caller's, below the rootfs, and enter_rootfs() chroots (as runc):
  // nothing here may change the propagation of the caller's mounts.
  if (opts.mount_namespace) {
    unsigned long root_propagation = mounts::propagation_flags(spec.linux.rootfs_propagation);
    do_mount("", "/", nullptr, root_propagation, "");
    unshare_rootfs_parent(opts.rootfs, root_propagation);
    // pivot_root needs the rootfs to be a mount point.
    do_mount(opts.rootfs, opts.rootfs, nullptr, MS_BIND | MS_REC, "");
    do_mount("", opts.rootfs, nullptr, MS_PRIVATE, "");
  }

  bool dev_mounted = false;
  for (const auto& m : spec.mounts) {
    mount_one(m, opts);
    dev_mounted = dev_mounted || paths::clean(m.destination) == "/dev";
  }
  (void)dev_mounted;
  if (opts.enter_cgroup) opts.enter_cgroup();
  mkdir_p(opts.rootfs + "/dev");
  devices::create_devices(opts.rootfs, spec.linux.devices, opts.in_userns);
  devices::create_dev_symlinks(opts.rootfs);
}

void enter_rootfs(const Options& opts) {
  if (!opts.mount_namespace) {
    if (::chdir(opts.rootfs.c_str()) != 0) throw_errno("chdir " + opts.rootfs);
    if (::chroot(".") != 0) throw_errno("chroot " + opts.rootfs);
    if (::chdir("/") != 0) throw_errno("chdir /");
    return;
  }
  if (opts.no_pivot) {
    if (::chdir(opts.rootfs.c_str()) != 0) throw_errno("chdir " + opts.rootfs);
    do_mount(opts.rootfs, "/", nullptr, MS_MOVE, "");
    if (::chroot(".") != 0) throw_errno("chroot " + opts.rootfs);
    if (::chdir("/") != 0) throw_errno("chdir /");
    return;
  }
  UniqueFd old_root(::open("/", O_DIRECTORY | O_RDONLY | O_CLOEXEC));
  UniqueFd new_root(::open(opts.rootfs.c_str(), O_DIRECTORY | O_RDONLY | O_CLOEXEC));
  if (!old_root || !new_root) throw_errno("open rootfs " + opts.rootfs);
  if (::fchdir(new_root.get()) != 0) throw_errno("chdir " + opts.rootfs);
  if (::syscall(SYS_pivot_root, ".", ".") != 0) throw_errno("pivot_root " + opts.rootfs);
  // The old root is now stacked under "."; detach it.
  if (::fchdir(old_root.get()) != 0) throw_errno("chdir old root");
  do_mount("", ".", nullptr, MS_SLAVE | MS_REC, "");
  if (::umount2(".", MNT_DETACH) != 0) throw_errno("unmount old root");
  if (::chdir("/") != 0) throw_errno("chdir /");
}

void finish_rootfs(const spec::Spec& spec) {
  for (const auto& p : spec.linux.readonly_paths) {
    if (!path_exists(p)) continue;
    do_mount(p, p, nullptr, MS_BIND | MS_REC, "");
    remount_bind(p, MS_RDONLY | MS_REC);
  }
  for (const auto& p : spec.linux.masked_paths) {
    if (!path_exists(p)) continue;
    if (is_directory(p))
      do_mount("tmpfs", p, "tmpfs", MS_RDONLY, "");
    else
      do_mount("/dev/null", p, nullptr, MS_BIND, "");
  }
  if (spec.root.readonly) remount_bind("/", MS_RDONLY);
  if (!spec.linux.rootfs_propagation.empty())
    do_mount("", "/", nullptr, mounts::propagation_flags(spec.linux.rootfs_propagation), "");
}

}  // namespace crx::rootfs
