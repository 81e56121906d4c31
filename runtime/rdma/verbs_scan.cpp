#include "rdma/verbs_scan.hpp"

#include <dirent.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <memory>

#include "common/fs.hpp"
#include "rdma/rdma_error.hpp"

namespace crx::rdma {
namespace {

struct DirCloser {
  void operator()(DIR* d) const { ::closedir(d); }
};

std::string trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

}  // namespace

std::vector<int> fds_linking_to(pid_t pid, std::string_view prefix, const std::string& proc_root) {
  std::string dir = proc_root + "/" + std::to_string(pid) + "/fd";
  std::unique_ptr<DIR, DirCloser> d(::opendir(dir.c_str()));
  if (!d) {
    if (errno == ENOENT || errno == ESRCH) return {};
    throw_rdma_errno(RdmaCause::System, "open " + dir, errno);
  }
  std::vector<int> out;
  while (struct dirent* e = ::readdir(d.get())) {
    if (e->d_name[0] == '.') continue;
    char target[PATH_MAX];
    std::string link = dir + "/" + e->d_name;
    ssize_t n = ::readlink(link.c_str(), target, sizeof target - 1);
    if (n < 0) {
      if (errno == ENOENT) continue;  // closed meanwhile
      throw_rdma_errno(RdmaCause::System, "readlink " + link, errno);
    }
    if (std::string_view(target, static_cast<size_t>(n)).starts_with(prefix))
      out.push_back(std::atoi(e->d_name));
  }
  return out;
}

bool any_holds_verbs(const std::vector<pid_t>& pids, const std::string& proc_root) {
  for (pid_t pid : pids)
    if (!fds_linking_to(pid, kUverbsPrefix, proc_root).empty()) return true;
  return false;
}

UniqueFd open_pidfd(pid_t pid) {
  UniqueFd fd(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));
  if (!fd && errno != ESRCH)
    throw_rdma_errno(RdmaCause::System, "pidfd_open " + std::to_string(pid), errno);
  return fd;
}

UniqueFd copy_fd(int pidfd, pid_t pid, int target_fd) {
  UniqueFd fd(static_cast<int>(::syscall(SYS_pidfd_getfd, pidfd, target_fd, 0)));
  if (!fd && errno != EBADF && errno != ESRCH) {
    throw_rdma_errno(RdmaCause::System,
                     "pidfd_getfd fd " + std::to_string(target_fd) + " of pid " +
                         std::to_string(pid),
                     errno);
  }
  return fd;
}

std::string uverbs_device_name(dev_t rdev, const std::string& sysfs_root) {
  std::string want = std::to_string(major(rdev)) + ":" + std::to_string(minor(rdev));
  std::string cls = sysfs_root + "/class/infiniband_verbs";
  std::unique_ptr<DIR, DirCloser> d(::opendir(cls.c_str()));
  if (d) {
    while (struct dirent* e = ::readdir(d.get())) {
      if (e->d_name[0] == '.') continue;
      std::string entry = cls + "/" + e->d_name;
      auto dev = read_file_if_present(entry + "/dev");
      if (!dev || trimmed(*dev) != want) continue;
      auto ibdev = read_file_if_present(entry + "/ibdev");
      if (ibdev) return trimmed(*ibdev);
    }
  }
  throw RdmaError(RdmaCause::System, "no RDMA device in " + cls + " has char device " + want,
                  ENODEV);
}

}  // namespace crx::rdma
