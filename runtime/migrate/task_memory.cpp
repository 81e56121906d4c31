#include "migrate/task_memory.hpp"

#include <sys/uio.h>

#include <cerrno>
#include <sstream>
#include <string>

#include "common/error.hpp"
#include "common/fs.hpp"
#include "common/retry_eintr.hpp"

namespace crx::migrate {

std::vector<pid_t> namespace_pids(pid_t pid) {
  const std::string path = "/proc/" + std::to_string(pid) + "/status";
  std::istringstream status(read_file(path));
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("NSpid:", 0) != 0) continue;
    std::istringstream fields(line.substr(6));
    std::vector<pid_t> pids;
    for (pid_t p; fields >> p;) pids.push_back(p);
    if (!pids.empty()) return pids;
    break;
  }
  throw Error(path + " has no NSpid line", Cause::Unsupported);
}

ProcTaskMemory::ProcTaskMemory(const std::vector<pid_t>& pids, pid_t init) {
  // A task's pid in init's namespace is at init's depth of its NSpid list;
  // one with fewer levels is not in that namespace (not the container's).
  const size_t level = namespace_pids(init).size();
  for (pid_t p : pids) {
    std::vector<pid_t> ns = namespace_pids(p);
    if (ns.size() >= level) host_pid_[static_cast<uint64_t>(ns[level - 1])] = p;
  }
}

bool ProcTaskMemory::read(uint64_t vpid, uint64_t vaddr, void* buf, size_t len) {
  auto host = host_pid_.find(vpid);
  if (host == host_pid_.end())
    throw Error("the container has no task " + std::to_string(vpid) + " (pid in its namespace)",
                Cause::NotFound);
  auto* p = static_cast<char*>(buf);
  size_t got = 0;
  while (got < len) {
    struct iovec local{p + got, len - got};
    struct iovec remote{reinterpret_cast<void*>(vaddr + got), len - got};
    ssize_t n = retry_eintr([&] { return ::process_vm_readv(host->second, &local, 1, &remote, 1, 0); });
    // EFAULT: no readable memory there; 0: the same, after a readable part.
    if (n == 0 || (n < 0 && errno == EFAULT)) return false;
    if (n < 0)
      throw_errno("reading task " + std::to_string(vpid) + "'s memory at " + std::to_string(vaddr));
    got += static_cast<size_t>(n);
  }
  return true;
}

}  // namespace crx::migrate
