// Finding verbs contexts among a process's fds: /proc/<pid>/fd links to
// /dev/infiniband/uverbsN, copied with pidfd_open + pidfd_getfd, named by
// the uverbs char device's sysfs entry.
#pragma once
#include <sys/types.h>

#include <string>
#include <string_view>
#include <vector>

#include "common/unique_fd.hpp"

namespace crx::rdma {

inline constexpr std::string_view kUverbsPrefix = "/dev/infiniband/uverbs";

// Fd numbers of pid whose /proc link target starts with prefix. A process
// that is gone gives none; other errors throw RdmaError(System) with errno.
std::vector<int> fds_linking_to(pid_t pid, std::string_view prefix,
                                const std::string& proc_root = "/proc");

// Does any of pids hold a verbs context (an fd on a uverbs device)?
// Processes that are gone hold none; other errors throw as above. Asked of
// frozen tasks, the answer holds until they are thawed.
bool any_holds_verbs(const std::vector<pid_t>& pids, const std::string& proc_root = "/proc");

// A pidfd of pid; an invalid UniqueFd if the process is gone (ESRCH).
UniqueFd open_pidfd(pid_t pid);
// Our own copy of fd target_fd of the process behind pidfd (pidfd_getfd);
// invalid if it was closed meanwhile (EBADF). Other errors throw.
UniqueFd copy_fd(int pidfd, pid_t pid, int target_fd);

// The RDMA device ("rxe0") of a uverbs char device: the entry of
// <sysfs>/class/infiniband_verbs whose "dev" is major:minor of rdev, its
// "ibdev". Throws RdmaError(System, ENODEV) when there is none.
std::string uverbs_device_name(dev_t rdev, const std::string& sysfs_root = "/sys");

}  // namespace crx::rdma
