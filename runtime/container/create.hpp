// `crx create` (and the first half of `crx run`): builds a container from a
// bundle up to the point where its init waits on exec.fifo.
#pragma once
#include <sys/types.h>

#include <string>

#include "common/unique_fd.hpp"

namespace crx::container {

struct GlobalOptions {
  std::string root = "/run/crx";
  bool systemd_cgroup = false;
};

struct CreateOptions {
  std::string id;
  std::string bundle = ".";
  std::string pid_file;
  std::string console_socket;
  bool no_pivot = false;
  bool no_new_keyring = false;
  int preserve_fds = 0;
  // crx run in the foreground with terminal=true and no --console-socket:
  // the pty master arrives on this socket instead (crx proxies it).
  int own_console_fd = -1;
};

struct Created {
  pid_t pid = 0;
  bool terminal = false;  // process.terminal: a pty master was sent
};

// On any error nothing is left: no state dir, cgroup, mount or process.
Created create_container(const GlobalOptions& g, const CreateOptions& o);

}  // namespace crx::container
