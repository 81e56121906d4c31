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

std::vector<std::string> split_options(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    size_t end = s.find(',', start);
    if (end == std::string::npos) end = s.size();
    std::string o = s.substr(start, end - start);
    if (!o.empty() && o != "rw" && o != "ro") out.push_back(o);
    start = end + 1;
  }
  return out;
}

}  // namespace

std::optional<RootOptions> RootOptions::parse(const std::string& mountinfo_text) {
  std::optional<RootOptions> out;
  size_t pos = 0;
  while (pos < mountinfo_text.size()) {
    size_t nl = mountinfo_text.find('\n', pos);
    if (nl == std::string::npos) nl = mountinfo_text.size();
    const std::string line = mountinfo_text.substr(pos, nl - pos);
    pos = nl + 1;
    // Only lines parse_mountinfo() takes for a v2 hierarchy: the same
    // fields, unescaped.
    auto hs = parse_mountinfo(line);
    if (hs.size() != 1 || !hs[0].v2) continue;
    if (hs[0].mountpoint != kRoot && hs[0].mountpoint != kRoot + "/unified") continue;
    const size_t sep = line.find(" - ");
    std::vector<std::string> tail;
    size_t start = sep + 3;
    for (int field = 0; field < 3 && start <= line.size(); ++field) {
      size_t end = line.find(' ', start);
      if (end == std::string::npos) end = line.size();
      tail.push_back(line.substr(start, end - start));
      start = end + 1;
    }
    if (tail.size() < 3) continue;
    RootOptions r;
    r.mountpoint_ = hs[0].mountpoint;
    r.options_ = split_options(tail[2]);
    out = std::move(r);  // the last one mounted there is the one seen
  }
  return out;
}

std::optional<RootOptions> RootOptions::of_host() {
  return parse(read_file("/proc/self/mountinfo"));
}

namespace {
std::mutex g_held_mutex;
int g_holders = 0;
std::optional<RootOptions> g_held;
}  // namespace

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
  std::optional<RootOptions> now = parse(read_file("/proc/self/mountinfo"));
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
