// The container's file-system view, set up in the child inside its new mount
// namespace. Split in two so createContainer hooks can run in between:
//   prepare_rootfs()  propagation, rootfs bind, every spec mount, /dev
//   enter_rootfs()    pivot_root (or MS_MOVE+chroot with no_pivot, chroot
//                     without a mount namespace)
//   finish_rootfs()   masked and readonly paths, readonly root, propagation
#pragma once
#include <functional>
#include <string>

#include "spec/spec.hpp"

namespace crx::rootfs {

struct Options {
  std::string rootfs;   // absolute host path
  std::string bundle;   // relative bind sources are relative to it
  bool no_pivot = false;
  bool in_userns = false;
  bool new_cgroupns = false;
  // Called before the first step that needs the process in its cgroup (a
  // cgroup mount reads /proc/self/cgroup; mknod obeys the v1 devices
  // list); the runtime joins the cgroup meanwhile. May be empty.
  std::function<void()> enter_cgroup;
  // false: .linux.namespaces has no mount namespace (new or joined); the
  // mounts are made in the caller's and enter_rootfs() chroots
  // (finish_rootfs() is not for it).
  bool mount_namespace = true;
};

void prepare_rootfs(const spec::Spec& spec, const Options& opts);
void enter_rootfs(const Options& opts);
void finish_rootfs(const spec::Spec& spec);

// Mounts one spec mount below rootfs (exposed for tests).
void mount_one(const spec::Mount& m, const Options& opts);

}  // namespace crx::rootfs
