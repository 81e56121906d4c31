// A child process crx started and must reap, and how to start one. Every
// child the runtime forks, clones or execs is owned by one ChildProcess:
// whatever goes wrong between its start and the moment crx hands it over
// (release) or reaps it (wait), it is killed and reaped, never left behind.
#pragma once
#include <sys/types.h>

#include <chrono>
#include <string>
#include <vector>

namespace crx {

// Owns a child process: the destructor SIGKILLs and reaps it, unless it was
// waited for or released. Movable, not copyable.
//   ChildProcess helper(cloned.pid);  // a child forked or cloned by hand
//   ...                               // an exception here kills and reaps it
//   helper.release();                 // handed over: it lives on
// Adopting a pid <= 0 (the child's own side of a fork) owns nothing. A pid
// that is not our child (an init forked by our child) is still killed; its
// reaping then fails quietly (ECHILD), as its parent reaps it.
class ChildProcess {
 public:
  ChildProcess() = default;
  explicit ChildProcess(pid_t pid) : pid_(pid > 0 ? pid : -1) {}
  ChildProcess(ChildProcess&& o) noexcept;
  ChildProcess& operator=(ChildProcess&& o) noexcept;
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;
  ~ChildProcess();

  // -1 once reaped or released.
  pid_t pid() const { return pid_; }
  // Owned and not reaped yet.
  bool running() const { return pid_ > 0; }
  // Blocks until the child exits and returns its raw wait status; it is
  // gone afterwards. Throws Error (with waitpid's errno) when it fails.
  int wait();
  // Non-blocking: true and *status set once the child has exited.
  bool try_wait(int* status);
  // Waits at most timeout for the exit (a pidfd's poll: no sleep steps);
  // true and *status set once the child has exited, false when it still
  // runs. Throws Error with the errno of what failed.
  bool wait_for(std::chrono::milliseconds timeout, int* status);
  // SIGKILL and reap; nothing when there is no child.
  void kill_and_wait();
  // Gives the child up: neither killed nor reaped by this object any more.
  // Returns its pid (-1 when there was none).
  pid_t release();

 private:
  pid_t pid_ = -1;
};

// How spawn() starts the child.
struct SpawnOptions {
  // The file executed (execve; a relative path from the current directory).
  // Empty: argv[0], looked up in PATH.
  std::string path;
  // The child's whole environment ("NAME=value"); nullptr: crx's own.
  const std::vector<std::string>* env = nullptr;
  // Every fd of ours is close-on-exec in the child except these, which it
  // inherits under their own numbers.
  std::vector<int> keep_fds;
  // stdin, stdout and stderr on /dev/null (before the fds below).
  bool quiet = false;
  // >= 0: the fd that becomes the child's stdin / stdout / stderr.
  int stdin_fd = -1;
  int stdout_fd = -1;
  int stderr_fd = -1;
  // SIGKILL to the child when we die (PR_SET_PDEATHSIG; the kernel sends it
  // when the thread that called spawn exits, so call it from a thread that
  // outlives the child).
  bool die_with_parent = false;
  // The child starts with no signal blocked (not with crx's mask).
  bool unblock_signals = false;
  // Namespaces the child joins (setns, of any type), in this order, before
  // exec. A refusal is thrown like a failed exec, as "joining a namespace
  // for <path>" with setns's errno.
  std::vector<int> namespace_fds;
  // What a failed exec's Error says before ": <strerror>"; empty:
  // "exec <path or argv[0]>".
  std::string exec_error;
};

// fork + exec of argv. SIGPIPE is default in the child. Returns once the
// child has exec'd (an exec-error pipe closes on exec); a failed exec is
// reaped and thrown as Error with exec's errno.
ChildProcess spawn(const std::vector<std::string>& argv, const SpawnOptions& options = {});

// "exited with status 1" / "killed by signal 9 (Killed)".
std::string describe_wait_status(int status);

}  // namespace crx
