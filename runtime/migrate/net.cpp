#include "migrate/net.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <linux/sockios.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "common/error.hpp"
#include "common/retry_eintr.hpp"

namespace crx::migrate {

std::string HostPort::str() const {
  std::string h = host.find(':') != std::string::npos ? "[" + host + "]" : host;
  return h + ":" + std::to_string(port);
}

HostPort parse_host_port(const std::string& text) {
  HostPort hp;
  std::string port;
  if (!text.empty() && text[0] == '[') {
    size_t close = text.find(']');
    if (close == std::string::npos || close + 1 >= text.size() || text[close + 1] != ':')
      throw Error("invalid address \"" + text + "\": expected [IPv6]:PORT");
    hp.host = text.substr(1, close - 1);
    port = text.substr(close + 2);
  } else {
    size_t colon = text.rfind(':');
    if (colon == std::string::npos) throw Error("invalid address \"" + text + "\": expected HOST:PORT");
    hp.host = text.substr(0, colon);
    if (hp.host.find(':') != std::string::npos)
      throw Error("invalid address \"" + text + "\": put IPv6 addresses in brackets");
    port = text.substr(colon + 1);
  }
  if (port.empty() || port.size() > 5 || port.find_first_not_of("0123456789") != std::string::npos)
    throw Error("invalid port in \"" + text + "\"");
  hp.port = std::stoi(port);
  if (hp.port > 65535) throw Error("invalid port in \"" + text + "\": 0..65535");
  return hp;
}

namespace {

struct AddrInfo {
  addrinfo* ai = nullptr;
  ~AddrInfo() {
    if (ai) freeaddrinfo(ai);
  }
};

void resolve(const HostPort& hp, bool passive, AddrInfo* out) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  if (passive) hints.ai_flags = AI_PASSIVE;
  std::string port = std::to_string(hp.port);
  int r = getaddrinfo(hp.host.empty() ? nullptr : hp.host.c_str(), port.c_str(), &hints, &out->ai);
  if (r != 0) throw Error("resolve " + hp.str() + ": " + gai_strerror(r));
}

void tune(int fd) {
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

}  // namespace

UniqueFd connect_tcp(const HostPort& to, std::chrono::milliseconds timeout) {
  AddrInfo res;
  resolve(to, false, &res);
  int last_err = 0;
  for (addrinfo* a = res.ai; a; a = a->ai_next) {
    UniqueFd fd(::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    if (!fd) {
      last_err = errno;
      continue;
    }
    int r = ::connect(fd.get(), a->ai_addr, a->ai_addrlen);
    if (r != 0 && errno == EINPROGRESS) {
      struct pollfd p{fd.get(), POLLOUT, 0};
      int wait_ms = timeout.count() > 0 ? static_cast<int>(timeout.count()) : -1;
      int pr = retry_eintr([&] { return ::poll(&p, 1, wait_ms); });
      if (pr == 0) {
        last_err = ETIMEDOUT;
        continue;
      }
      int soerr = 0;
      socklen_t len = sizeof soerr;
      ::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &soerr, &len);
      r = soerr ? -1 : 0;
      errno = soerr;
    }
    if (r != 0) {
      last_err = errno;
      continue;
    }
    int flags = ::fcntl(fd.get(), F_GETFL);
    ::fcntl(fd.get(), F_SETFL, flags & ~O_NONBLOCK);
    tune(fd.get());
    return fd;
  }
  std::string hint = last_err == ECONNREFUSED ? " (is `crx receive` listening there?)" : "";
  throw Error("connect to " + to.str() + ": " + std::strerror(last_err) + hint);
}

TcpListener::TcpListener(const HostPort& at) {
  AddrInfo res;
  resolve(at, true, &res);
  int last_err = 0;
  for (addrinfo* a = res.ai; a; a = a->ai_next) {
    UniqueFd fd(::socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, 0));
    if (!fd) {
      last_err = errno;
      continue;
    }
    int one = 1;
    ::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(fd.get(), a->ai_addr, a->ai_addrlen) != 0 || ::listen(fd.get(), 8) != 0) {
      last_err = errno;
      continue;
    }
    sockaddr_storage ss{};
    socklen_t len = sizeof ss;
    ::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&ss), &len);
    port_ = ss.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6*>(&ss)->sin6_port)
                                     : ntohs(reinterpret_cast<sockaddr_in*>(&ss)->sin_port);
    fd_ = std::move(fd);
    return;
  }
  throw Error("listen on " + at.str() + ": " + std::strerror(last_err));
}

UniqueFd TcpListener::accept(std::chrono::milliseconds timeout, std::string* peer) {
  struct pollfd p{fd_.get(), POLLIN, 0};
  int wait_ms = timeout.count() > 0 ? static_cast<int>(timeout.count()) : -1;
  int r = retry_eintr([&] { return ::poll(&p, 1, wait_ms); });
  if (r < 0) throw_errno("poll listening socket");
  if (r == 0) throw Error("no connection within " + std::to_string(timeout.count() / 1000) + " s");
  UniqueFd fd(::accept4(fd_.get(), nullptr, nullptr, SOCK_CLOEXEC));
  if (!fd) throw_errno("accept");
  tune(fd.get());
  if (peer) *peer = peer_name(fd.get());
  return fd;
}

void detect_dead_peer(int fd, std::chrono::milliseconds within) {
  if (within.count() <= 0) return;
  int secs = std::max<int>(3, static_cast<int>(within.count() / 1000));
  int one = 1;
  int idle = std::max(1, secs / 3);
  int intvl = std::max(1, secs / 6);
  int cnt = 3;
  auto user_timeout = static_cast<unsigned>(within.count());
  ::setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof one);
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof idle);
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof intvl);
  ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof cnt);
  ::setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &user_timeout, sizeof user_timeout);
}

namespace {
int send_queue_bytes(int fd, std::string_view what) {
  int queued = 0;
  if (::ioctl(fd, SIOCOUTQ, &queued) != 0) throw_errno(std::string(what) + " (SIOCOUTQ)");
  return queued;
}
}  // namespace

void read_answer(int fd, void* buf, size_t len, std::string_view what) {
  auto* p = static_cast<char*>(buf);
  size_t got = 0;
  int queued_before = send_queue_bytes(fd, what);
  while (got < len) {
    ssize_t n = retry_eintr([&] { return ::read(fd, p + got, len - got); });
    if (n > 0) {
      got += static_cast<size_t>(n);
      continue;
    }
    if (n == 0) throw Error(std::string(what) + ": the peer closed the connection", Cause::IO);
    if (errno != EAGAIN && errno != EWOULDBLOCK) throw_errno(what);
    // A whole time-out without an answer: silence, unless the peer took
    // some of what was sent before the question meanwhile.
    const int queued = send_queue_bytes(fd, what);
    if (queued >= queued_before) throw_errno(what, ETIMEDOUT);
    queued_before = queued;
  }
}

std::string peer_name(int fd) {
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  if (::getpeername(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return "peer";
  char host[INET6_ADDRSTRLEN] = "?";
  int port = 0;
  if (ss.ss_family == AF_INET) {
    auto* in = reinterpret_cast<sockaddr_in*>(&ss);
    inet_ntop(AF_INET, &in->sin_addr, host, sizeof host);
    port = ntohs(in->sin_port);
    return std::string(host) + ":" + std::to_string(port);
  }
  if (ss.ss_family == AF_INET6) {
    auto* in = reinterpret_cast<sockaddr_in6*>(&ss);
    inet_ntop(AF_INET6, &in->sin6_addr, host, sizeof host);
    port = ntohs(in->sin6_port);
    return "[" + std::string(host) + "]:" + std::to_string(port);
  }
  return "local peer";
}

}  // namespace crx::migrate
