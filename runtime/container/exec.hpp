// `crx exec`: starts one more process inside a running container. It joins
// every namespace the container has (/proc/<init>/ns/*, user first, mount
// last), the container's cgroup, and gets the container's seccomp filter,
// the process' capabilities, rlimits, user and no_new_privs, as runc does.
//
// Process tree: crx forks a helper that enters the cgroup and the
// namespaces; the helper clone(CLONE_PARENT)s the real process (so it lands
// in the container's pid namespace and is crx's own child) and exits.
#pragma once
#include <sys/types.h>

#include <string>

#include "container/create.hpp"
#include "spec/spec.hpp"

namespace crx::container {

struct ExecOptions {
  std::string id;
  spec::Process process;
  bool detach = false;
  std::string pid_file;
  std::string console_socket;
  int preserve_fds = 0;
  // Foreground exec with a tty and no --console-socket: the pty master is
  // sent on this socket (crx proxies it), as for `crx run`.
  int own_console_fd = -1;
};

struct Executed {
  pid_t pid = 0;  // host pid of the exec'd process (a child of the caller)
  bool terminal = false;
};

// Reads the container's saved config (for building the process from
// command-line overrides). Throws "container X does not exist".
nlohmann::json container_config(const GlobalOptions& g, const std::string& id);

// Returns once the process has exec'd (errors before execve are thrown,
// with the container-side message). Writes pid_file if set.
Executed exec_in_container(const GlobalOptions& g, const ExecOptions& o);

}  // namespace crx::container
