#include "linux/lsm.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>

#include "common/error.hpp"
#include "common/fs.hpp"
#include "common/unique_fd.hpp"

namespace crx::linux_ {

namespace {

[[noreturn]] void unsupported(const std::string& path, const std::string& message) {
  throw Error("config.json: " + path + ": " + message, Cause::Unsupported);
}

}  // namespace

bool apparmor_enabled() {
  if (!path_exists("/sys/kernel/security/apparmor")) return false;
  auto flag = read_file_if_present("/sys/module/apparmor/parameters/enabled");
  return flag && !flag->empty() && (*flag)[0] == 'Y';
}

bool selinux_enabled() { return path_exists("/sys/fs/selinux/enforce"); }

void check_host_support(const spec::Spec& spec) {
  const auto& p = spec.process;
  if (!p.apparmor_profile.empty() && !apparmor_enabled())
    unsupported(".process.apparmorProfile",
                "apparmor profile \"" + p.apparmor_profile +
                    "\" is set but AppArmor is not enabled on this host");
  if (!p.selinux_label.empty()) {
    if (!selinux_enabled())
      unsupported(".process.selinuxLabel",
                  "selinux label is specified in config, but selinux is disabled or not supported");
    unsupported(".process.selinuxLabel", "SELinux labels are not supported by crx");
  }
  // runc passes it as a context= mount option; on a host without SELinux
  // that fails a mount, here it is ignored (there is nothing to label).
  if (!spec.linux.mount_label.empty() && selinux_enabled())
    unsupported(".linux.mountLabel", "SELinux labels are not supported by crx");

  const auto& l = spec.linux;
  if (!l.has_intel_rdt) return;
  bool resctrl = path_exists("/sys/fs/resctrl/info");
  if (resctrl)
    unsupported(".linux.intelRdt", "Intel RDT is not supported by crx (resctrl is mounted)");
  // As runc: closID alone is ignored without RDT; a schema is refused.
  if (!l.intel_rdt_l3_cache_schema.empty())
    unsupported(".linux.intelRdt.l3CacheSchema",
                "intelRdt.l3CacheSchema is specified in config, but Intel RDT/CAT is not enabled");
  if (!l.intel_rdt_mem_bw_schema.empty())
    unsupported(".linux.intelRdt.memBwSchema",
                "intelRdt.memBwSchema is specified in config, but Intel RDT/MBA is not enabled");
}

void apply_apparmor_profile(const std::string& profile) {
  if (profile.empty() || !apparmor_enabled()) return;
  std::string value = "exec " + profile;
  // the per-LSM interface first (kernel 5.1+), then the shared one
  for (const char* file : {"/proc/self/attr/apparmor/exec", "/proc/self/attr/exec"}) {
    UniqueFd fd(::open(file, O_WRONLY | O_CLOEXEC));
    if (!fd) {
      if (errno == ENOENT) continue;
      throw_errno(std::string("apparmor profile \"") + profile + "\": open " + file);
    }
    if (::write(fd.get(), value.data(), value.size()) != static_cast<ssize_t>(value.size()))
      throw_errno("apply apparmor profile \"" + profile + "\"");
    return;
  }
  throw Error("apply apparmor profile \"" + profile + "\": no /proc/self/attr/exec", Cause::Unsupported);
}

}  // namespace crx::linux_
