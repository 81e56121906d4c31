// Seccomp filters from the OCI `linux.seccomp` object, built with libseccomp.
//
// Two steps, so the expensive part runs before clone and the child only makes
// one syscall right before exec:
//   1. build_seccomp(spec) -> SeccompFilter   (parent; throws crx::Error for an
//      unknown action, architecture, flag, operator or syscall name)
//   2. filter.load()                          (container child; raw seccomp(2)
//      with the spec's flags)
// As runc does: without noNewPrivileges the filter must be loaded while the
// process still has CAP_SYS_ADMIN (before set_user/apply_capabilities); with
// noNewPrivileges it is loaded as late as possible, right before execve.
// See capabilities.hpp for the whole call order.
//
// SCMP_ACT_NOTIFY: load() returns the listener fd; the runtime sends it to
// linux.seccomp.listenerPath with send_seccomp_listener_fd() (runc's
// ContainerProcessState message).
#pragma once
#include <linux/filter.h>

#include <string>
#include <vector>

#include "common/unique_fd.hpp"
#include "spec/spec.hpp"

namespace crx::linux_ {

class SeccompFilter {
 public:
  SeccompFilter() = default;
  SeccompFilter(std::vector<sock_filter> program, unsigned flags, bool uses_notify)
      : program_(std::move(program)), flags_(flags), uses_notify_(uses_notify) {}

  // The BPF program as libseccomp generated it.
  const std::vector<sock_filter>& program() const { return program_; }
  // SECCOMP_FILTER_FLAG_* bits passed to seccomp(2) (NEW_LISTENER added by
  // load() when the filter uses SCMP_ACT_NOTIFY).
  unsigned flags() const { return flags_; }
  bool uses_notify() const { return uses_notify_; }
  bool empty() const { return program_.empty(); }

  // Installs the filter on the calling thread. Returns the notify listener fd
  // when the filter uses SCMP_ACT_NOTIFY, an invalid UniqueFd otherwise.
  // Needs no_new_privs or CAP_SYS_ADMIN. Throws crx::Error.
  UniqueFd load() const;

 private:
  std::vector<sock_filter> program_;
  unsigned flags_ = 0;
  bool uses_notify_ = false;
};

SeccompFilter build_seccomp(const spec::Seccomp& seccomp);

// Human-readable pseudo code of the filter (libseccomp's PFC export), for
// --debug output and tests.
std::string seccomp_pfc(const spec::Seccomp& seccomp);

// Resolvers used by build_seccomp, exposed for validation and tests.
uint32_t seccomp_action(const std::string& name, std::optional<unsigned> errno_ret);
uint32_t seccomp_arch(const std::string& name);  // "SCMP_ARCH_X86_64" -> SCMP_ARCH_X86_64
unsigned seccomp_flag(const std::string& name);  // "SECCOMP_FILTER_FLAG_LOG" -> bit

// Connects to the listener's unix socket and sends the notify fd with
// SCM_RIGHTS; the payload is runc's ContainerProcessState JSON:
// {"ociVersion", "fds":["seccompFd"], "pid", "metadata", "state"}.
// listenerPath is a host path: from the container child (after pivot_root,
// maybe after setuid, with the filter loaded) connect it beforehand, as
// for the console socket, and use the overload with the connected fd.
// runc reports the container's host pid in "pid".
void send_seccomp_listener_fd(const std::string& listener_path, int notify_fd, int pid,
                              const std::string& metadata, const nlohmann::json& state);
void send_seccomp_listener_fd(int connected_fd, int notify_fd, int pid,
                              const std::string& metadata, const nlohmann::json& state);

}  // namespace crx::linux_
