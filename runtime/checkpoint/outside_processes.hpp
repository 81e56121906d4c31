// Processes of a container that a CRIU dump of its init's tree would not
// carry. CRIU dumps one tree: the init and its descendants, found through
// /proc/<pid>/task/<tid>/children. A process started with `crx exec` (or
// containerd's `ctr task exec`) is a child of the caller, outside that tree,
// yet in the container's cgroup and pid namespace: CRIU 3.17.1 ptrace-stops
// it with the frozen cgroup, logs "Unexpected process N in the freezer
// cgroup" and leaves it out of the images (runtime/migrate/README.md,
// "Processes outside the init's tree"). crx accounts for every such process
// before it freezes anything and refuses, unless the caller accepted to
// lose them (--kill-exec).
//
// The process table is an interface so that the detection is unit-tested
// with a fake one (tests/unit/checkpoint_outside_processes_test.cpp).
#pragma once
#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "state/store.hpp"

namespace crx::checkpoint {

struct ProcessInfo {
  pid_t ppid = 0;        // host pid of the parent (0: none visible)
  char state = 'R';      // /proc/<pid>/stat field 3: 'Z' is a zombie
  std::string command;   // cmdline joined by spaces, or "[comm]"
};

class ProcessTable {
 public:
  virtual ~ProcessTable() = default;
  // Every process (thread group) in the container's cgroup.
  virtual std::vector<pid_t> cgroup_pids() const = 0;
  // Every process in the container's pid namespace; empty when the
  // container shares the caller's pid namespace.
  virtual std::vector<pid_t> pid_namespace_pids() const = 0;
  // nullopt when the process is gone.
  virtual std::optional<ProcessInfo> info(pid_t pid) const = 0;
};

struct OutsideProcess {
  pid_t pid = 0;
  std::string command;
};

// The container's live processes (cgroup and pid namespace) on each side
// of the init's tree, from one walk of the table, each sorted by pid.
// in_tree: what a dump carries, init and its descendants. outside: neither
// init nor one of its descendants. Zombies are on neither side: they have
// nothing left to lose.
struct ProcessSplit {
  std::vector<OutsideProcess> in_tree;
  std::vector<OutsideProcess> outside;
  std::vector<pid_t> in_tree_pids() const;
};
ProcessSplit split_processes(const ProcessTable& t, pid_t init);
// One side of it.
std::vector<OutsideProcess> processes_outside_tree(const ProcessTable& t, pid_t init);
std::vector<OutsideProcess> processes_in_tree(const ProcessTable& t, pid_t init);

// The one line that refuses: names the container, the pids and commands,
// and the way out.
std::string outside_processes_error(const std::string& id, const std::vector<OutsideProcess>& p);
// "1234 (sh -c ...), 1240 (sleep 1)": for reports.
std::string describe(const std::vector<OutsideProcess>& p);

// The real table: the container's cgroup (from its state) and /proc.
class SystemProcessTable : public ProcessTable {
 public:
  explicit SystemProcessTable(const state::ContainerState& st);
  std::vector<pid_t> cgroup_pids() const override;
  std::vector<pid_t> pid_namespace_pids() const override;
  std::optional<ProcessInfo> info(pid_t pid) const override;

 private:
  nlohmann::json cgroup_;
  pid_t init_ = 0;
};

// split_processes of a running or paused container, with the system's
// table; and one side of it.
ProcessSplit container_processes(const state::ContainerState& st);
std::vector<OutsideProcess> container_processes_outside_tree(const state::ContainerState& st);
std::vector<OutsideProcess> container_processes_in_tree(const state::ContainerState& st);

}  // namespace crx::checkpoint
