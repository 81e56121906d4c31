#include "linux/fds.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <linux/close_range.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>

#include "common/error.hpp"

namespace crx::linux_ {
namespace {

bool parse_int(const char* text, long* out) {
  if (!text || !*text) return false;
  char* end = nullptr;
  errno = 0;
  long v = std::strtol(text, &end, 10);
  if (errno || *end) return false;
  *out = v;
  return true;
}

// Fallback for kernels without close_range(CLOSE_RANGE_CLOEXEC) (< 5.11).
void cloexec_from_proc(int first) {
  DIR* dir = ::opendir("/proc/self/fd");
  if (!dir) throw_errno("open /proc/self/fd");
  const int own = ::dirfd(dir);
  while (dirent* e = ::readdir(dir)) {
    long fd;
    if (!parse_int(e->d_name, &fd) || fd < first || fd == own) continue;
    int flags = ::fcntl(static_cast<int>(fd), F_GETFD);
    if (flags >= 0) ::fcntl(static_cast<int>(fd), F_SETFD, flags | FD_CLOEXEC);
  }
  ::closedir(dir);
}

}  // namespace

int listen_fd_count() {
  long fds = 0, pid = 0;
  if (!parse_int(std::getenv("LISTEN_FDS"), &fds) || !parse_int(std::getenv("LISTEN_PID"), &pid))
    return 0;
  if (pid != ::getpid() || fds <= 0 || fds > INT_MAX - 3) return 0;
  return static_cast<int>(fds);
}

int passed_fd_count(int preserve_fds) {
  if (preserve_fds < 0) throw Error("--preserve-fds must not be negative");
  return listen_fd_count() + preserve_fds;
}

void check_passed_fds_open(int count) {
  for (int fd = 3; fd < 3 + count; ++fd)
    if (::fcntl(fd, F_GETFD) < 0)
      throw Error("file descriptor " + std::to_string(fd) +
                  " is not open but should be passed to the container (--preserve-fds / "
                  "LISTEN_FDS)");
}

void add_listen_fds_env(std::vector<std::string>& env, int count) {
  if (count <= 0) return;
  std::erase_if(env, [](const std::string& e) {
    return e.rfind("LISTEN_FDS=", 0) == 0 || e.rfind("LISTEN_PID=", 0) == 0;
  });
  env.push_back("LISTEN_FDS=" + std::to_string(count));
  env.push_back("LISTEN_PID=1");
}

void prepare_preserved_fds(int count) {
  for (int fd = 3; fd < 3 + count; ++fd) {
    int flags = ::fcntl(fd, F_GETFD);
    if (flags < 0) throw_errno("preserve fd " + std::to_string(fd));
    if (::fcntl(fd, F_SETFD, flags & ~FD_CLOEXEC) < 0)
      throw_errno("clear close-on-exec on fd " + std::to_string(fd));
  }
  const unsigned first = 3u + static_cast<unsigned>(count);
  if (::syscall(SYS_close_range, first, ~0u, CLOSE_RANGE_CLOEXEC) < 0) {
    if (errno != EINVAL && errno != ENOSYS) throw_errno("close_range(CLOSE_RANGE_CLOEXEC)");
    cloexec_from_proc(static_cast<int>(first));
  }
}

}  // namespace crx::linux_
