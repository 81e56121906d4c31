#include "checkpoint/unix_sockets.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/sock_diag.h>
#include <linux/unix_diag.h>
#include <sched.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <exception>
#include <thread>

#include "common/error.hpp"
#include "common/retry_eintr.hpp"
#include "common/unique_fd.hpp"

namespace crx::checkpoint {
namespace {

const char* type_name(int type) {
  switch (type) {
    case SOCK_STREAM: return "stream";
    case SOCK_DGRAM: return "datagram";
    case SOCK_SEQPACKET: return "seqpacket";
    default: return "unix";
  }
}

// "socket:[1234]" -> 1234, else 0.
uint32_t socket_inode(const std::string& link) {
  constexpr std::string_view prefix = "socket:[";
  if (link.compare(0, prefix.size(), prefix) != 0 || link.back() != ']') return 0;
  try {
    return static_cast<uint32_t>(std::stoul(link.substr(prefix.size())));
  } catch (const std::exception&) {
    return 0;
  }
}

// A NETLINK_SOCK_DIAG socket of the network namespace `netns_pid` is in.
// A netlink socket belongs to the namespace of the thread that made it, so
// a short-lived thread joins the namespace (setns affects only itself) and
// makes it.
UniqueFd diag_socket_in(pid_t netns_pid) {
  auto make = [] { return UniqueFd(::socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_SOCK_DIAG)); };
  if (netns_pid == 0) {
    UniqueFd s = make();
    if (!s) throw_errno("sock_diag: socket");
    return s;
  }
  std::string ns = "/proc/" + std::to_string(netns_pid) + "/ns/net";
  UniqueFd nsfd(::open(ns.c_str(), O_RDONLY | O_CLOEXEC));
  if (!nsfd) throw_errno("open " + ns);
  UniqueFd s;
  int err = 0;
  const char* step = "";
  std::thread joiner([&] {
    if (::setns(nsfd.get(), CLONE_NEWNET) != 0) {
      err = errno;
      step = "setns";
      return;
    }
    s = make();
    if (!s) {
      err = errno;
      step = "socket";
    }
  });
  joiner.join();
  if (err) throw_errno(std::string("sock_diag in the network namespace of pid ") +
                           std::to_string(netns_pid) + ": " + step,
                       err);
  return s;
}

struct DiagRequest {
  nlmsghdr nlh;
  unix_diag_req req;
};

void parse_attrs(const unix_diag_msg* m, size_t len, UnixSocketInfo& info) {
  auto* rta = reinterpret_cast<const rtattr*>(m + 1);
  auto left = static_cast<int>(len - NLMSG_ALIGN(sizeof *m));
  for (; RTA_OK(rta, left); rta = RTA_NEXT(rta, left)) {
    if (rta->rta_type == UNIX_DIAG_PEER && RTA_PAYLOAD(rta) >= sizeof(uint32_t)) {
      std::memcpy(&info.peer, RTA_DATA(rta), sizeof(uint32_t));
    } else if (rta->rta_type == UNIX_DIAG_NAME && RTA_PAYLOAD(rta) > 0) {
      auto* p = static_cast<const char*>(RTA_DATA(rta));
      std::string name(p, RTA_PAYLOAD(rta));
      if (name[0] == '\0') {
        name[0] = '@';  // abstract
      } else {
        name = name.c_str();
      }
      info.path = name;
    }
  }
}

}  // namespace

std::vector<ExternalUnixSocket> external_unix_sockets(const std::map<uint32_t, SocketFd>& ours,
                                                      const std::vector<UnixSocketInfo>& diag,
                                                      bool ext_unix_sk) {
  std::map<uint32_t, const UnixSocketInfo*> by_inode;
  for (auto& s : diag) by_inode[s.inode] = &s;
  std::vector<ExternalUnixSocket> out;
  for (auto& s : diag) {
    auto mine = ours.find(s.inode);
    if (mine == ours.end() || s.peer == 0 || ours.count(s.peer)) continue;
    if (ext_unix_sk && s.type == SOCK_DGRAM) continue;
    ExternalUnixSocket e{mine->second, s, {}};
    if (auto p = by_inode.find(s.peer); p != by_inode.end()) e.peer_path = p->second->path;
    out.push_back(std::move(e));
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
    return std::tie(a.where.pid, a.where.fd) < std::tie(b.where.pid, b.where.fd);
  });
  return out;
}

std::map<uint32_t, SocketFd> socket_fds(const std::vector<pid_t>& pids) {
  std::map<uint32_t, SocketFd> out;
  for (pid_t pid : pids) {
    std::string dir = "/proc/" + std::to_string(pid) + "/fd";
    DIR* d = ::opendir(dir.c_str());
    if (!d) continue;  // gone
    while (dirent* e = ::readdir(d)) {
      if (e->d_name[0] == '.') continue;
      char buf[PATH_MAX];
      ssize_t n = ::readlinkat(::dirfd(d), e->d_name, buf, sizeof buf - 1);
      if (n <= 0) continue;
      uint32_t ino = socket_inode(std::string(buf, static_cast<size_t>(n)));
      if (ino) out.emplace(ino, SocketFd{pid, std::atoi(e->d_name)});
    }
    ::closedir(d);
  }
  return out;
}

std::vector<UnixSocketInfo> unix_sockets_of_netns(pid_t netns_pid) {
  UniqueFd s = diag_socket_in(netns_pid);
  DiagRequest r{};
  r.nlh.nlmsg_len = sizeof r;
  r.nlh.nlmsg_type = SOCK_DIAG_BY_FAMILY;
  r.nlh.nlmsg_flags = NLM_F_REQUEST | NLM_F_DUMP;
  r.req.sdiag_family = AF_UNIX;
  r.req.udiag_states = ~0u;
  r.req.udiag_show = UDIAG_SHOW_NAME | UDIAG_SHOW_PEER;
  sockaddr_nl kernel{};
  kernel.nl_family = AF_NETLINK;
  if (::sendto(s.get(), &r, sizeof r, 0, reinterpret_cast<sockaddr*>(&kernel), sizeof kernel) < 0)
    throw_errno("sock_diag: send");

  std::vector<UnixSocketInfo> out;
  alignas(nlmsghdr) char buf[32768];
  for (;;) {
    ssize_t n = retry_eintr([&] { return ::recv(s.get(), buf, sizeof buf, 0); });
    if (n < 0) throw_errno("sock_diag: receive");
    if (n == 0) throw Error("sock_diag: the kernel closed the dump early", EPROTO);
    auto left = static_cast<int>(n);
    for (auto* h = reinterpret_cast<nlmsghdr*>(buf); NLMSG_OK(h, left); h = NLMSG_NEXT(h, left)) {
      if (h->nlmsg_type == NLMSG_DONE) return out;
      if (h->nlmsg_type == NLMSG_ERROR) {
        auto* e = static_cast<nlmsgerr*>(NLMSG_DATA(h));
        throw_errno("sock_diag: unix sockets", -e->error);
      }
      if (h->nlmsg_len < NLMSG_LENGTH(sizeof(unix_diag_msg))) continue;
      auto* m = static_cast<const unix_diag_msg*>(NLMSG_DATA(h));
      UnixSocketInfo info;
      info.inode = m->udiag_ino;
      info.type = m->udiag_type;
      parse_attrs(m, h->nlmsg_len - NLMSG_LENGTH(0), info);
      out.push_back(std::move(info));
    }
  }
}

std::string external_unix_sockets_error(const std::string& id,
                                        const std::vector<ExternalUnixSocket>& s) {
  std::string list;
  for (auto& e : s) {
    if (!list.empty()) list += ", ";
    list += "pid " + std::to_string(e.where.pid) + " fd " + std::to_string(e.where.fd) + " (" +
            type_name(e.socket.type);
    if (!e.socket.path.empty()) list += " " + e.socket.path;
    list += " -> " + (e.peer_path.empty() ? "socket:[" + std::to_string(e.socket.peer) + "]"
                                          : e.peer_path) +
            ")";
  }
  bool dgram = std::any_of(s.begin(), s.end(), [](auto& e) { return e.socket.type == SOCK_DGRAM; });
  return "container " + id + " has unix sockets connected to processes outside it: " + list +
         "; CRIU carries a unix socket only together with its peer" +
         (dgram ? " (a datagram socket with --ext-unix-sk)" : "");
}

void check_unix_sockets(const std::string& id, pid_t init, const std::vector<pid_t>& pids,
                        bool ext_unix_sk) {
  auto ours = socket_fds(pids);
  if (ours.empty()) return;
  auto external = external_unix_sockets(ours, unix_sockets_of_netns(init), ext_unix_sk);
  if (!external.empty()) throw Error(external_unix_sockets_error(id, external), EBUSY);
}

}  // namespace crx::checkpoint
