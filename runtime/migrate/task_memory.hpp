// The memory of a frozen container's tasks, as the page filter reads it
// (page_dedup.hpp): the final dump of a container with verbs objects
// takes CRIU's word that a page is unchanged since the pre-copy round only
// after crx has read the page itself and compared its content.
//
// Why crx reads and not CRIU: CRIU decides "unchanged" from the soft-dirty
// bit, which the NIC's writes into pinned memory never set, and which a
// pre-dump clears on a pinned transparent huge page (runtime/migrate/README.md,
// "Pages the destination has already"). Reading the pages costs a copy and
// a hash; CRIU dumping them all costs its parasite, a pipe and a socket
// for every page, inside the frozen window.
//
// Tasks are named as CRIU names their page images: by their pid in the
// container's pid namespace (the namespace of its init).
#pragma once
#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <vector>


namespace crx::migrate {

class TaskMemory {
 public:
  virtual ~TaskMemory() = default;
  // Reads len bytes at vaddr of task vpid into buf. False when CRIU's
  // word stands for the range: it is not all readable memory of the task
  // (nothing there, a guard page), memory no device can have pinned; or
  // no device wrote there since the first pre-copy round
  // (written_task_memory.hpp). Throws Error for anything else (a task the
  // container does not have, one that is gone).
  virtual bool read(uint64_t vpid, uint64_t vaddr, void* buf, size_t len) = 0;
};

// With process_vm_readv(2): one copy from the task's page to the buffer
// (/proc/<pid>/mem copies twice, through a kernel page: 328 against
// 386-447 MB/s in a test-bed guest, 2026-12-01). Memory the task cannot
// read itself (PROT_NONE) is unreadable here too. The processes must stay
// put while it is used (the container is frozen).
class ProcTaskMemory : public TaskMemory {
 public:
  // pids: the container's processes (host pids, its cgroup's); init: its
  // init, whose pid namespace CRIU's ids are in. Throws Error when a pid's
  // status cannot be read.
  ProcTaskMemory(const std::vector<pid_t>& pids, pid_t init);
  bool read(uint64_t vpid, uint64_t vaddr, void* buf, size_t len) override;

  size_t tasks() const { return host_pid_.size(); }
  // vpid -> host pid of every task
  const std::unordered_map<uint64_t, pid_t>& host_pids() const { return host_pid_; }

 private:
  std::unordered_map<uint64_t, pid_t> host_pid_;  // vpid -> host pid
};

// The NSpid line of /proc/<pid>/status: the pid in each pid namespace the
// process is in, outermost first. Throws Error when there is none.
std::vector<pid_t> namespace_pids(pid_t pid);

}  // namespace crx::migrate
