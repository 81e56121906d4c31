// The foreground part shared by `crx run` and `crx exec`: crx blocks the
// signals, waits for its child, forwards signals to it, proxies its
// terminal and returns its exit status.
#pragma once
#include <signal.h>
#include <sys/types.h>

#include <optional>

#include "common/unique_fd.hpp"

namespace crx::cmd {

// Blocks every catchable signal; they are read from a signalfd instead.
class BlockedSignals {
 public:
  BlockedSignals();
  ~BlockedSignals();
  BlockedSignals(const BlockedSignals&) = delete;
  BlockedSignals& operator=(const BlockedSignals&) = delete;
  int fd() const { return fd_.get(); }

 private:
  sigset_t old_;
  UniqueFd fd_;
};

// exit code, or 128+signal, as a shell reports it.
int exit_status(int wait_status);

// Reaps children (crx may be a subreaper); returns pid's exit status once
// it has exited.
std::optional<int> reap(pid_t pid);

// Until `pid` exits: forwards every signal but SIGCHLD/SIGWINCH to it,
// proxies pty_master (if >= 0) to crx's stdin/stdout. Returns pid's status.
int wait_foreground(const BlockedSignals& signals, pid_t pid, int pty_master);

}  // namespace crx::cmd
