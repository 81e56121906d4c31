// A child process we started and must reap: RAII kill+wait, and spawning
// with a chosen set of fds inherited under their own numbers.
#pragma once
#include <sys/types.h>

#include <string>
#include <vector>

namespace crx::checkpoint {

class ChildProcess {
 public:
  ChildProcess() = default;
  explicit ChildProcess(pid_t pid) : pid_(pid) {}
  ChildProcess(ChildProcess&& o) noexcept : pid_(o.pid_) { o.pid_ = -1; }
  ChildProcess& operator=(ChildProcess&& o) noexcept;
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  // Kills (SIGKILL) and reaps a child still running.
  ~ChildProcess();

  pid_t pid() const { return pid_; }
  bool running() const { return pid_ > 0; }
  // Blocks; returns the raw wait status. The child is gone afterwards.
  int wait();
  // Non-blocking: true and *status set once the child has exited.
  bool try_wait(int* status);
  // SIGKILL + wait; no-op when already reaped.
  void kill_and_wait();

 private:
  pid_t pid_ = -1;
};

// fork + execvp(argv[0], argv). Every fd of ours is close-on-exec except
// those in keep_fds, which the child inherits under the same number.
// stdin/stdout/stderr are inherited unless quiet (then /dev/null).
// stdin_fd/stdout_fd/stderr_fd >= 0 become the child's stdin/stdout/stderr.
// env: the child's whole environment ("NAME=value"); nullptr keeps ours.
// die_with_parent: SIGKILL to the child when we die (PR_SET_PDEATHSIG; the
// kernel sends it when the thread that called spawn exits, so call it from
// a thread that outlives the child).
ChildProcess spawn(const std::vector<std::string>& argv, const std::vector<int>& keep_fds,
                   bool quiet = false, int stdin_fd = -1, int stdout_fd = -1,
                   int stderr_fd = -1, const std::vector<std::string>* env = nullptr,
                   bool die_with_parent = false);

// "exited with status 1" / "killed by signal 9".
std::string describe_wait_status(int status);

}  // namespace crx::checkpoint
