#include "checkpoint/restore_guard.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>

#include <nlohmann/json.hpp>
#include <optional>

#include "common/error.hpp"
#include "common/fs.hpp"
#include "cgroup/cgroup.hpp"

namespace crx::checkpoint {
namespace {

// Everything below runs in the guard, a forked child of a process that may
// have threads: no heap, no locks, system calls on prepared strings only.

constexpr int kMaxPasses = 100;  // ~2 s of passes 20 ms apart

// a + b into out (NUL-terminated); false when it does not fit.
bool join(char* out, size_t n, const char* a, const char* b) {
  size_t la = std::strlen(a), lb = std::strlen(b);
  if (la + lb + 1 > n) return false;
  std::memcpy(out, a, la);
  std::memcpy(out + la, b, lb + 1);
  return true;
}

void write_to(const char* dir, const char* file, const char* value) {
  char path[PATH_MAX];
  if (!join(path, sizeof path, dir, file)) return;
  int fd = ::open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return;
  (void)!::write(fd, value, std::strlen(value));
  ::close(fd);
}

// Is pid a process that has not exited (not a zombie)? /proc/<pid>/stat's
// state follows the last ')'.
bool live(long pid) {
  char num[24], dir[40], path[48];
  int n = 0;
  char rev[24];
  do {
    rev[n++] = static_cast<char>('0' + pid % 10);
    pid /= 10;
  } while (pid > 0 && n < 20);
  for (int i = 0; i < n; ++i) num[i] = rev[n - 1 - i];
  num[n] = '\0';
  if (!join(dir, sizeof dir, "/proc/", num) || !join(path, sizeof path, dir, "/stat")) return false;
  int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char buf[512];
  ssize_t len = ::read(fd, buf, sizeof buf);
  ::close(fd);
  for (ssize_t i = len - 1; i > 0; --i) {
    if (buf[i] != ')') continue;
    return i + 2 < len && buf[i + 2] != 'Z' && buf[i + 2] != 'X';
  }
  return false;
}

// SIGKILL to every live pid listed in dir/cgroup.procs; how many there were.
int kill_listed(const char* dir) {
  char path[PATH_MAX];
  if (!join(path, sizeof path, dir, "/cgroup.procs")) return 0;
  int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return 0;
  int found = 0;
  long pid = 0;
  bool digits = false;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(fd, buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR)) {
    for (ssize_t i = 0; i < n; ++i) {
      char c = buf[i];
      if (c >= '0' && c <= '9') {
        pid = pid * 10 + (c - '0');
        digits = true;
      } else {
        if (digits && pid > 0 && live(pid) && ::kill(static_cast<pid_t>(pid), SIGKILL) == 0) ++found;
        pid = 0;
        digits = false;
      }
    }
  }
  if (digits && pid > 0 && live(pid) && ::kill(static_cast<pid_t>(pid), SIGKILL) == 0) ++found;
  ::close(fd);
  return found;
}

// Does /proc/<pid>/cmdline start with the title?
bool titled(const char* pid, const std::string& title, bool whole) {
  char dir[64], path[80];
  if (!join(dir, sizeof dir, "/proc/", pid) || !join(path, sizeof path, dir, "/cmdline"))
    return false;
  int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char buf[PATH_MAX + 64];
  size_t want = title.size() + 1 < sizeof buf ? title.size() + 1 : sizeof buf;
  size_t have = 0;
  while (have < want) {
    ssize_t n = ::read(fd, buf + have, want - have);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    have += static_cast<size_t>(n);
  }
  ::close(fd);
  if (have < title.size() || std::memcmp(buf, title.data(), title.size()) != 0) return false;
  if (!whole || have == title.size()) return true;
  char next = buf[title.size()];
  return next == '\0' || next == ' ';
}

// SIGKILL to every process with the title; how many there were.
int kill_titled(const std::string& title, bool whole) {
  if (title.empty()) return 0;
  int d = ::open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (d < 0) return 0;
  pid_t self = ::getpid();
  int found = 0;
  alignas(struct dirent64) char buf[8192];
  long n;
  while ((n = ::syscall(SYS_getdents64, d, buf, sizeof buf)) > 0) {
    for (long off = 0; off < n;) {
      auto* e = reinterpret_cast<struct dirent64*>(buf + off);
      off += e->d_reclen;
      const char* name = e->d_name;
      long v = 0;
      const char* c = name;
      for (; *c >= '0' && *c <= '9' && v < INT_MAX / 10; ++c) v = v * 10 + (*c - '0');
      if (*c != '\0' || v <= 0) continue;
      pid_t pid = static_cast<pid_t>(v);
      if (pid == self || !titled(name, title, whole)) continue;
      if (::kill(pid, SIGKILL) == 0) ++found;
    }
  }
  ::close(d);
  return found;
}

void close_all_but_stdin() {
  if (::syscall(SYS_close_range, 1U, ~0U, 0U) == 0) return;
  struct rlimit r{};
  long max = ::getrlimit(RLIMIT_NOFILE, &r) == 0 ? static_cast<long>(r.rlim_cur) : 1024;
  if (max > 65536 || max < 0) max = 65536;
  for (long fd = 1; fd < max; ++fd) ::close(static_cast<int>(fd));
}

}  // namespace

std::string restore_title(const std::string& images_dir) {
  char real[PATH_MAX];
  std::string path = ::realpath(images_dir.c_str(), real) ? std::string(real) : images_dir;
  return "criu: restore --rpc -D " + path;
}

int kill_restore_leftovers(const RestoreLeftovers& l) {
  int killed = 0;
  for (int pass = 0; pass < kMaxPasses; ++pass) {
    int found = 0;
    // Listed first: a task cgroup.kill got to may already be a zombie when
    // cgroup.procs is read, and would go uncounted.
    for (const auto& dir : l.cgroup_dirs) {
      found += kill_listed(dir.c_str());
      write_to(dir.c_str(), "/cgroup.kill", "1");
    }
    // A frozen task dies only once thawed (v1 freezer).
    for (const auto& dir : l.cgroup_dirs) {
      write_to(dir.c_str(), "/cgroup.freeze", "0");
      write_to(dir.c_str(), "/freezer.state", "THAWED");
    }
    found += kill_titled(l.title, l.whole_title);
    killed += found;
    if (found == 0) break;
    struct timespec ts{0, 20 * 1000 * 1000};
    while (::nanosleep(&ts, &ts) != 0 && errno == EINTR) {
    }
  }
  return killed;
}

namespace {
constexpr const char* kRestoringCgroup = "/restore-cgroup.json";
}

void record_restoring_cgroup(const std::string& state_dir, const std::string& saved_cgroup) {
  write_file_atomic(state_dir + kRestoringCgroup, saved_cgroup);
}

void forget_restoring_cgroup(const std::string& state_dir) {
  ::unlink((state_dir + kRestoringCgroup).c_str());
}

std::optional<std::string> restoring_cgroup(const std::string& state_dir) {
  return read_file_if_present(state_dir + kRestoringCgroup);
}

std::vector<std::string> remove_unfinished_restore(const std::string& state_dir,
                                                   const std::string& images_root) {
  std::vector<std::string> done;
  RestoreLeftovers l;
  l.title = restore_title(images_root) + "/";
  l.whole_title = false;
  std::optional<cgroup::Cgroup> cg;
  if (!state_dir.empty()) {
    if (auto text = read_file_if_present(state_dir + kRestoringCgroup)) {
      try {
        cg = cgroup::Cgroup::load(nlohmann::json::parse(*text));
        for (const auto& [ctrl, dir] : cg->dirs()) l.cgroup_dirs.push_back(dir);
      } catch (const std::exception& e) {
        done.push_back("unreadable " + state_dir + kRestoringCgroup + ": " + e.what());
      }
    }
  }
  if (int n = kill_restore_leftovers(l); n > 0) {
    done.push_back("killed " + std::to_string(n) + " task(s) of a restore that never finished (" +
                   l.title + "...)");
  }
  if (cg) {
    try {
      cg->destroy();
      done.push_back("removed the cgroup of that restore");
    } catch (const std::exception& e) {
      done.push_back(std::string("could not remove the cgroup of that restore: ") + e.what());
    }
  }
  return done;
}

RestoreGuard::RestoreGuard(RestoreLeftovers l) : l_(std::move(l)) {
  int p[2];
  if (::pipe2(p, O_CLOEXEC) != 0) throw_errno("pipe for the restore guard");
  pid_t pid = ::fork();
  if (pid < 0) {
    int e = errno;
    ::close(p[0]);
    ::close(p[1]);
    throw_errno("fork the restore guard", e);
  }
  if (pid == 0) {
    ::dup2(p[0], 0);
    // Nothing of ours stays open in the guard: a connection it kept would
    // hide our death from the other end.
    close_all_but_stdin();
    ::setsid();
    struct sigaction ign{};
    ign.sa_handler = SIG_IGN;
    for (int s : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE, SIGUSR1, SIGUSR2})
      ::sigaction(s, &ign, nullptr);
    char c;
    while (::read(0, &c, 1) < 0 && errno == EINTR) {
    }
    // The pipe closed: the restoring process is gone without disarming us.
    kill_restore_leftovers(l_);
    ::_exit(0);
  }
  ::close(p[0]);
  pid_ = pid;
  pipe_w_ = p[1];
}

RestoreGuard::~RestoreGuard() { disarm(); }

void RestoreGuard::disarm() {
  if (pid_ > 0) {
    // Killed before the pipe closes, so that it never takes the close for
    // our death.
    ::kill(pid_, SIGKILL);
    int status;
    while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
    }
    pid_ = -1;
  }
  if (pipe_w_ >= 0) {
    ::close(pipe_w_);
    pipe_w_ = -1;
  }
}

}  // namespace crx::checkpoint
