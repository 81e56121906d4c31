#include "checkpoint/criu_root.hpp"

#include <sys/mount.h>
#include <unistd.h>

#include "common/error.hpp"
#include "common/fs.hpp"

namespace crx::checkpoint {

CriuRoot::CriuRoot(const std::string& rootfs, const std::string& at) : path_(at) {
  mkdir_p(at, 0700);
  if (::mount(rootfs.c_str(), at.c_str(), nullptr, MS_BIND | MS_REC, nullptr) != 0) {
    int e = errno;
    ::rmdir(path_.c_str());
    throw_errno("bind-mount " + rootfs + " on " + at, e);
  }
  mounted_ = true;
}

CriuRoot::~CriuRoot() {
  if (mounted_) ::umount2(path_.c_str(), MNT_DETACH);
  ::rmdir(path_.c_str());
}

}  // namespace crx::checkpoint
