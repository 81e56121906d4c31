// The container's init process, between clone() and execve().
// Runs in the child; reports every failure to the parent over the sync
// channel as one line and exits. Never returns.
#pragma once
#include <string>

#include "common/unique_fd.hpp"
#include "container/sync.hpp"
#include "cgroup/cgroup.hpp"
#include "linux/seccomp.hpp"
#include "spec/spec.hpp"

namespace crx::container {

struct InitContext {
  const spec::Spec* spec = nullptr;
  std::string rootfs;   // absolute host path
  std::string bundle;
  int sync_fd = -1;
  int fifo_fd = -1;     // O_PATH fd of exec.fifo
  int console_fd = -1;  // connected --console-socket (or crx run's own socketpair)
  bool no_pivot = false;
  bool new_userns = false;
  bool new_cgroupns = false;
  int preserve_fds = 0;
  std::string state_json;  // OCI state for createContainer/startContainer hooks
  const linux_::SeccompFilter* seccomp = nullptr;
  // Set when the init joins the cgroup's v1 hierarchies itself (it was born
  // in the cgroup2 part); null when the parent attaches it and says
  // CgroupJoined.
  const cgroup::Cgroup* join_cgroup_v1 = nullptr;
};

[[noreturn]] void container_init(const InitContext& ctx);

// PATH lookup in the container's environment ("sh" -> "/bin/sh").
// Throws crx::Error 'exec: "x": executable file not found in $PATH'.
std::string find_executable(const std::string& name, const std::vector<std::string>& env);

}  // namespace crx::container
