#include "cgroup/root_options.hpp"

#include <fcntl.h>
#include <linux/mount.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <mutex>

#include "cgroup/paths.hpp"
#include "common/error.hpp"
#include "common/fs.hpp"
#include "common/unique_fd.hpp"

namespace crx::cgroup {
namespace {

const std::string kRoot = "/sys/fs/cgroup";

// The copy the CRIU runs of this process share (acquire()).
std::mutex g_held_mutex;
int g_holders = 0;
std::optional<RootOptions> g_held;

}  // namespace

std::optional<RootOptions> RootOptions::parse(const std::string& mountinfo_text) {
  std::optional<RootOptions> out;
  for (const Hierarchy& h : parse_mountinfo(mountinfo_text)) {
    if (!h.v2 || (h.mountpoint != kRoot && h.mountpoint != kRoot + "/unified")) continue;
    RootOptions r;
    r.mountpoint_ = h.mountpoint;
    for (const std::string& o : h.super_options)
      if (o != "rw" && o != "ro") r.options_.push_back(o);
    out = std::move(r);  // the last one mounted there is the one seen
  }
  return out;
}

std::optional<RootOptions> RootOptions::of_host() {
  return parse(read_file("/proc/self/mountinfo"));
}

std::optional<RootOptions> RootOptions::acquire() {
  std::lock_guard<std::mutex> lock(g_held_mutex);
  if (g_holders == 0) g_held = of_host();  // throws: not held
  ++g_holders;
  return g_held;
}

void RootOptions::release() {
  std::lock_guard<std::mutex> lock(g_held_mutex);
  if (g_holders > 0 && --g_holders == 0) g_held.reset();
}

bool RootOptions::put_back() const {
  std::optional<RootOptions> now = of_host();
  if (now && *now == *this) return false;
  UniqueFd fs(static_cast<int>(
      ::syscall(SYS_fspick, AT_FDCWD, mountpoint_.c_str(), FSPICK_CLOEXEC)));
  if (!fs) throw_errno("cgroup: fspick " + mountpoint_);
  for (const std::string& o : options_) {
    if (::syscall(SYS_fsconfig, fs.get(), FSCONFIG_SET_FLAG, o.c_str(), nullptr, 0) != 0)
      throw_errno("cgroup: option " + o + " of " + mountpoint_);
  }
  if (::syscall(SYS_fsconfig, fs.get(), FSCONFIG_CMD_RECONFIGURE, nullptr, nullptr, 0) != 0)
    throw_errno("cgroup: reconfiguring " + mountpoint_);
  return true;
}

}  // namespace crx::cgroup
