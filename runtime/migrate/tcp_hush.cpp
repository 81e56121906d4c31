#include "migrate/tcp_hush.hpp"

#include <dirent.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <set>
#include <string>

#include "common/log.hpp"

namespace crx::migrate {
namespace {

// Only established connections need silencing (and only they, besides
// closed sockets, can be put in repair mode); a listening socket closes
// without a word anyway.
bool is_established_tcp(int fd) {
  int domain = 0, protocol = 0;
  socklen_t len = sizeof domain;
  if (::getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &domain, &len) != 0) return false;
  len = sizeof protocol;
  if (::getsockopt(fd, SOL_SOCKET, SO_PROTOCOL, &protocol, &len) != 0) return false;
  if ((domain != AF_INET && domain != AF_INET6) || protocol != IPPROTO_TCP) return false;
  struct tcp_info info{};
  len = sizeof info;
  if (::getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &len) != 0) return false;
  return info.tcpi_state == TCP_ESTABLISHED;
}

}  // namespace

SilencedTcpSockets::SilencedTcpSockets(const std::vector<pid_t>& pids) {
  std::set<ino_t> seen;
  for (pid_t pid : pids) {
    UniqueFd pidfd(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));
    if (!pidfd) {
      if (errno != ESRCH) log::warn("silencing TCP of pid " + std::to_string(pid) +
                                    ": pidfd_open: " + std::strerror(errno));
      continue;
    }
    std::string fd_dir = "/proc/" + std::to_string(pid) + "/fd";
    DIR* d = ::opendir(fd_dir.c_str());
    if (!d) continue;
    while (struct dirent* e = ::readdir(d)) {
      if (e->d_name[0] == '.') continue;
      char target[64] = {};
      std::string link = fd_dir + "/" + e->d_name;
      if (::readlink(link.c_str(), target, sizeof target - 1) <= 0 ||
          std::strncmp(target, "socket:", 7) != 0)
        continue;
      int num = std::atoi(e->d_name);
      UniqueFd dup(static_cast<int>(::syscall(SYS_pidfd_getfd, pidfd.get(), num, 0)));
      if (!dup) {
        log::warn("silencing TCP of pid " + std::to_string(pid) + ": pidfd_getfd " +
                  e->d_name + ": " + std::strerror(errno));
        continue;
      }
      struct stat st{};
      if (::fstat(dup.get(), &st) != 0 || !seen.insert(st.st_ino).second) continue;
      if (!is_established_tcp(dup.get())) continue;
      int on = 1;
      if (::setsockopt(dup.get(), IPPROTO_TCP, TCP_REPAIR, &on, sizeof on) != 0) {
        log::warn("silencing TCP of pid " + std::to_string(pid) + ": TCP_REPAIR on fd " +
                  e->d_name + ": " + std::strerror(errno));
        continue;
      }
      sockets_.push_back(std::move(dup));
    }
    ::closedir(d);
  }
}

}  // namespace crx::migrate
