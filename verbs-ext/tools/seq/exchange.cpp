#include "seq/exchange.hpp"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <memory>
#include <thread>

#include "common/error.hpp"
#include "common/retry_eintr.hpp"
#include "seq/clock.hpp"

namespace crx::verbs_seq {

using Clock = std::chrono::steady_clock;

static int remaining_ms(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return left > 0 ? static_cast<int>(left) : 0;
}

static Clock::time_point deadline_after(double seconds) {
  return Clock::now() + std::chrono::milliseconds(static_cast<int64_t>(seconds * 1000));
}

UniqueFd accept_peer(const std::string& address, uint16_t port, double timeout_s) {
  UniqueFd listener(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!listener) throw_errno("socket");
  int one = 1;
  setsockopt(listener.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(port);
  if (inet_pton(AF_INET, address.c_str(), &sa.sin_addr) != 1)
    throw Error("--bind wants an IPv4 address, got " + address);
  if (::bind(listener.get(), reinterpret_cast<sockaddr*>(&sa), sizeof sa))
    throw_errno("bind " + address + ":" + std::to_string(port));
  if (::listen(listener.get(), 1)) throw_errno("listen");
  // The wait goes on through EINTR unless a stop signal set its flag: a
  // process restored by CRIU while it waited here gets EINTR from the poll
  // (CRIU cannot restart a poll with a timeout), and must keep listening.
  auto deadline = deadline_after(timeout_s);
  pollfd pfd{listener.get(), POLLIN, 0};
  int r;
  while ((r = ::poll(&pfd, 1, remaining_ms(deadline))) < 0 && errno == EINTR && !g_stop_signal) {
  }
  if (r < 0) throw_errno("poll on the listening socket");
  if (r == 0) throw Error("no peer connected to port " + std::to_string(port) + " within the setup timeout");
  UniqueFd peer(::accept4(listener.get(), nullptr, nullptr, SOCK_CLOEXEC));
  if (!peer) throw_errno("accept");
  setsockopt(peer.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return peer;
}

UniqueFd connect_peer(const std::string& host, uint16_t port, double timeout_s) {
  auto deadline = deadline_after(timeout_s);
  addrinfo hints{};
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (int rc = getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res))
    throw Error("resolve " + host + ": " + gai_strerror(rc));
  std::unique_ptr<addrinfo, decltype(&freeaddrinfo)> guard(res, freeaddrinfo);
  int last_err = 0;
  do {
    UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (!fd) throw_errno("socket");
    if (::connect(fd.get(), res->ai_addr, res->ai_addrlen) == 0) {
      int one = 1;
      setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      return fd;
    }
    last_err = errno;
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  } while (Clock::now() < deadline);
  throw_errno("connect to " + host + ":" + std::to_string(port), last_err);
}

void send_line(int fd, const std::string& line) {
  std::string data = line + "\n";
  size_t off = 0;
  while (off < data.size()) {
    ssize_t n =
        retry_eintr([&] { return ::send(fd, data.data() + off, data.size() - off, MSG_NOSIGNAL); });
    if (n < 0) throw_errno("send to the peer");
    off += static_cast<size_t>(n);
  }
}

std::string receive_line(int fd, double timeout_s) {
  auto deadline = deadline_after(timeout_s);
  std::string line;
  for (;;) {
    pollfd pfd{fd, POLLIN, 0};
    int r = retry_eintr([&] { return ::poll(&pfd, 1, remaining_ms(deadline)); });
    if (r < 0) throw_errno("poll on the peer socket");
    if (r == 0) throw Error("the peer sent nothing within the setup timeout");
    // Byte by byte: the lines are short and nothing may be read past '\n'.
    char c;
    ssize_t n = retry_eintr([&] { return ::recv(fd, &c, 1, 0); });
    if (n < 0) throw_errno("receive from the peer");
    if (n == 0) throw Error("the peer closed the connection during set-up");
    if (c == '\n') return line;
    line.push_back(c);
    if (line.size() > (1u << 20)) throw Error("set-up line from the peer is too long");
  }
}

}  // namespace crx::verbs_seq
