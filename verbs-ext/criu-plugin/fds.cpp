#include "fds.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <ctime>
#include <fstream>

#include "ibv_migr.h"

extern "C" int criu_get_image_dir(void);

namespace crx::verbs_plugin {

bool is_uverbs(const struct stat& st) {
  return S_ISCHR(st.st_mode) && major(st.st_rdev) == kUverbsMajor &&
         minor(st.st_rdev) >= kUverbsMinorBase;
}

std::string fd_path(int fd) {
  char buf[256];
  std::string link = "/proc/self/fd/" + std::to_string(fd);
  ssize_t n = readlink(link.c_str(), buf, sizeof(buf) - 1);
  if (n < 0) return "";
  return std::string(buf, static_cast<size_t>(n));
}

bool is_event_file(int fd) { return fd_path(fd) == "anon_inode:[infinibandevent]"; }

std::string ibdev_of(const struct stat& st) {
  std::ifstream in("/sys/class/infiniband_verbs/uverbs" +
                   std::to_string(minor(st.st_rdev) - kUverbsMinorBase) + "/ibdev");
  std::string name;
  std::getline(in, name);
  return name;
}

namespace {

// One above the highest fd open in this task; -1 if /proc cannot say.
int above_open_fds() {
  DIR* d = opendir("/proc/self/fd");
  if (!d) return -1;
  int top = -1;
  while (struct dirent* e = readdir(d))
    if (e->d_name[0] != '.') top = std::max(top, atoi(e->d_name));
  closedir(d);
  return top + 1;
}

}  // namespace

int move_high(int fd) {
  // Above every fd open here. CRIU puts its service fds at the top of the
  // fd table it sized for the task and the process's fds below them
  // (servicefd.c, choose_service_fd_base), so it uses no number above,
  // and the table grows by one step. Half the fd limit (CRIU raises it
  // to nr_open), as before, grew the table to 2^20 entries: 25-46 ms of a
  // TCG guest's restore, and the restored process kept the 8 MiB table.
  long base = above_open_fds();
  if (base < 0) {
    struct rlimit rl;
    base = 512;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
      base = static_cast<long>(rl.rlim_cur / 2);
  }
  if (base < 64) base = 64;
  int nfd = fcntl(fd, F_DUPFD_CLOEXEC, base);
  int err = errno;
  close(fd);
  return nfd < 0 ? -err : nfd;
}

int read_image_file(const std::string& name, std::vector<uint8_t>* out) {
  int fd = openat(criu_get_image_dir(), name.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -errno;
  // read into place, sized once: the context's image is megabytes, read
  // in the frozen window
  struct stat st;
  if (fstat(fd, &st) < 0) {
    int err = errno;
    close(fd);
    return -err;
  }
  out->resize(static_cast<size_t>(st.st_size));
  size_t got = 0;
  for (;;) {
    // once full, the end of the file is found in a small buffer: growing
    // the vector for it would copy the whole image
    uint8_t more[4096];
    const bool full = got == out->size();
    ssize_t n = full ? read(fd, more, sizeof(more))
                     : read(fd, out->data() + got, out->size() - got);
    if (n < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      close(fd);
      return -err;
    }
    if (n == 0) break;
    if (full) out->insert(out->end(), more, more + n);  // grew since the fstat
    got += static_cast<size_t>(n);
  }
  out->resize(got);
  close(fd);
  return 0;
}

int write_image_file(const std::string& name, const void* data, size_t len) {
  int fd = openat(criu_get_image_dir(), name.c_str(),
                  O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return -errno;
  const uint8_t* p = static_cast<const uint8_t*>(data);
  while (len) {
    ssize_t n = write(fd, p, len);
    if (n < 0) {
      if (errno == EINTR) continue;
      int err = errno;
      close(fd);
      return -err;
    }
    p += n;
    len -= static_cast<size_t>(n);
  }
  return close(fd) ? -errno : 0;
}

bool image_file_exists(const std::string& name) {
  return faccessat(criu_get_image_dir(), name.c_str(), F_OK, 0) == 0;
}

double now_ms() {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

int dump_context_of(int fd, unsigned flags, std::vector<uint8_t>* out, int* count) {
  FdContext c(fd);
  void* dump = nullptr;
  size_t length = 0;
  int err = ibv_dump_context_alloc(&c.ctx, count, &dump, &length, flags);
  if (err) return err;
  const auto* p = static_cast<const uint8_t*>(dump);
  out->assign(p, p + length);
  free(dump);
  return 0;
}

}  // namespace crx::verbs_plugin
