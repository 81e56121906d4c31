#include "rdma/container_verbs.hpp"

#include <sys/stat.h>

#include <exception>

#include "rdma/rdma_error.hpp"
#include "rdma/verbs_scan.hpp"

namespace crx::rdma {

ContainerVerbs ContainerVerbs::of_processes(const std::vector<pid_t>& pids,
                                            const std::string& sysfs_root) {
  ContainerVerbs cv;
  for (pid_t pid : pids) {
    std::vector<int> fds = fds_linking_to(pid, kUverbsPrefix);
    if (fds.empty()) continue;
    UniqueFd pidfd = open_pidfd(pid);
    if (!pidfd) continue;  // gone
    for (int fd : fds) {
      UniqueFd copy = copy_fd(pidfd.get(), pid, fd);
      if (!copy) continue;
      struct stat st{};
      if (::fstat(copy.get(), &st) != 0)
        throw_rdma_errno(RdmaCause::System, "fstat uverbs fd of pid " + std::to_string(pid), errno);
      std::string device = uverbs_device_name(st.st_rdev, sysfs_root);
      cv.contexts_.emplace_back(pid, fd, std::move(copy), std::move(device));
    }
  }
  return cv;
}

RdmaInventory ContainerVerbs::inventory() const {
  RdmaInventory all;
  for (const auto& c : contexts_) all.add(c.inventory());
  return all;
}

namespace {

// f on every context; all are tried, the first error is thrown afterwards.
template <typename F>
int on_each(const std::vector<VerbsContext>& contexts, F f) {
  int n = 0;
  std::exception_ptr first;
  for (const auto& c : contexts) {
    try {
      n += f(c);
    } catch (...) {
      if (!first) first = std::current_exception();
    }
  }
  if (first) std::rethrow_exception(first);
  return n;
}

}  // namespace

int ContainerVerbs::resume_stopped() const {
  return on_each(contexts_, [](const VerbsContext& c) { return c.resume_stopped(); });
}

std::vector<ContextWrites> ContainerVerbs::mr_writes(bool clear) const {
  std::vector<ContextWrites> all;
  for (const auto& c : contexts_) all.push_back(c.mr_writes(clear));
  return all;
}

int ContainerVerbs::stop_all() const {
  return on_each(contexts_, [](const VerbsContext& c) { return c.stop_all(); });
}

}  // namespace crx::rdma
