#include "checkpoint/outside_terminal.hpp"

#include <sys/sysmacros.h>

#include <string>

namespace crx::checkpoint {

bool is_pty_slave(const struct stat& st) {
  constexpr unsigned kFirstMajor = 136, kLastMajor = 143;  // UNIX98_PTY_SLAVE_MAJOR + 7
  return S_ISCHR(st.st_mode) && major(st.st_rdev) >= kFirstMajor && major(st.st_rdev) <= kLastMajor;
}

bool stdio_is_outside_terminal(pid_t pid) {
  std::string proc = "/proc/" + std::to_string(pid);
  struct stat devpts;
  bool has_devpts = ::stat((proc + "/root/dev/pts").c_str(), &devpts) == 0;
  for (int fd = 0; fd <= 2; ++fd) {
    struct stat st;
    if (::stat((proc + "/fd/" + std::to_string(fd)).c_str(), &st) != 0 || !is_pty_slave(st)) continue;
    if (!has_devpts || st.st_dev != devpts.st_dev) return true;
  }
  return false;
}

}  // namespace crx::checkpoint
