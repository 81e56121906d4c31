// /dev inside the container: the default devices every container gets,
// the devices listed in the spec, and the usual symlinks.
#pragma once
#include <string>
#include <vector>

#include "spec/spec.hpp"

namespace crx::devices {

// The devices runc creates in every container (null, zero, full, random,
// urandom, tty).
const std::vector<spec::Device>& default_devices();

// Creates default + listed devices under <rootfs>/dev. In a user namespace
// (mknod not allowed) devices are bind mounts of the host's nodes.
void create_devices(const std::string& rootfs, const std::vector<spec::Device>& listed, bool in_userns);

// /dev/fd, /dev/std{in,out,err}, /dev/ptmx -> pts/ptmx, /dev/core.
void create_dev_symlinks(const std::string& rootfs);

}  // namespace crx::devices
