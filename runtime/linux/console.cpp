#include "linux/console.hpp"

#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/error.hpp"
#include "common/retry_eintr.hpp"

namespace crx::linux_ {

UniqueFd open_pty(std::string* slave_name, const std::optional<spec::ConsoleSize>& size) {
  UniqueFd master(::posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC));
  if (!master) throw_errno("console: open /dev/ptmx");
  if (::grantpt(master.get()) < 0) throw_errno("console: grantpt");
  if (::unlockpt(master.get()) < 0) throw_errno("console: unlockpt");
  char name[128];
  if (int rc = ::ptsname_r(master.get(), name, sizeof name); rc != 0)
    throw_errno("console: ptsname", rc);
  if (slave_name) *slave_name = name;
  if (size && size->height && size->width) set_window_size(master.get(), size->height, size->width);
  return master;
}

void set_window_size(int tty_fd, unsigned height, unsigned width) {
  winsize ws{};
  ws.ws_row = static_cast<unsigned short>(height);
  ws.ws_col = static_cast<unsigned short>(width);
  if (::ioctl(tty_fd, TIOCSWINSZ, &ws) < 0) throw_errno("console: set window size");
}

void use_console_as_stdio(const std::string& slave_name) {
  // A session leader cannot setsid() again (EPERM); that is fine.
  if (::setsid() < 0 && errno != EPERM) throw_errno("console: setsid");
  UniqueFd slave(::open(slave_name.c_str(), O_RDWR | O_NOCTTY | O_CLOEXEC));
  if (!slave) throw_errno("console: open " + slave_name);
  if (::ioctl(slave.get(), TIOCSCTTY, 0) < 0)
    throw_errno("console: make " + slave_name + " the controlling terminal");
  for (int target = 0; target <= 2; ++target)
    if (::dup2(slave.get(), target) < 0) throw_errno("console: dup2 " + slave_name);
}

UniqueFd connect_unix_socket(const std::string& path, const std::string& what) {
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof addr.sun_path)
    throw Error(what + ": socket path \"" + path + "\" is empty or too long");
  std::memcpy(addr.sun_path, path.c_str(), path.size() + 1);
  UniqueFd sock(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  if (!sock) throw_errno(what + ": socket");
  int rc = retry_eintr(
      [&] { return ::connect(sock.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr); });
  if (rc < 0) throw_errno(what + ": connect " + path);
  return sock;
}

void send_fd(int sock_fd, int fd, const std::string& payload, const std::string& what) {
  // An empty payload would look like EOF to the receiver; send one NUL then.
  std::string bytes = payload.empty() ? std::string(1, '\0') : payload;
  iovec iov{bytes.data(), bytes.size()};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  cmsghdr* cmsg = CMSG_FIRSTHDR(&msg);
  cmsg->cmsg_level = SOL_SOCKET;
  cmsg->cmsg_type = SCM_RIGHTS;
  cmsg->cmsg_len = CMSG_LEN(sizeof(int));
  std::memcpy(CMSG_DATA(cmsg), &fd, sizeof(int));
  ssize_t n = retry_eintr([&] { return ::sendmsg(sock_fd, &msg, MSG_NOSIGNAL); });
  if (n < 0) throw_errno(what + ": sendmsg");
  if (static_cast<size_t>(n) != bytes.size()) throw Error(what + ": short sendmsg");
}

UniqueFd recv_fd(int sock_fd, std::string* payload) {
  char buf[4096];
  iovec iov{buf, sizeof buf};
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int))] = {};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  ssize_t n = retry_eintr([&] { return ::recvmsg(sock_fd, &msg, MSG_CMSG_CLOEXEC); });
  if (n < 0) throw_errno("recvmsg");
  UniqueFd fd;
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS &&
        c->cmsg_len >= CMSG_LEN(sizeof(int))) {
      int received;
      std::memcpy(&received, CMSG_DATA(c), sizeof(int));
      fd.reset(received);
    }
  }
  if (!fd) throw Error(n == 0 ? "recvmsg: peer closed without sending a file descriptor"
                              : "recvmsg: message carried no file descriptor");
  if (msg.msg_flags & MSG_CTRUNC) throw Error("recvmsg: control data truncated");
  if (payload) {
    payload->assign(buf, static_cast<size_t>(n));
    while (!payload->empty() && payload->back() == '\0') payload->pop_back();
  }
  return fd;
}

void send_console_fd(const std::string& socket_path, int master_fd, const std::string& name) {
  UniqueFd sock = connect_unix_socket(socket_path, "console socket");
  send_fd(sock.get(), master_fd, name, "console socket " + socket_path);
}

// ---- PtyProxy ----

namespace {

// Writes all of data, waiting for POLLOUT when the fd is non-blocking.
bool write_all(int fd, const char* data, size_t len) {
  while (len > 0) {
    ssize_t n = retry_eintr([&] { return ::write(fd, data, len); });
    if (n < 0) {
      if (errno == EAGAIN) {
        pollfd p{fd, POLLOUT, 0};
        ::poll(&p, 1, -1);
        continue;
      }
      return false;
    }
    data += n;
    len -= static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

PtyProxy::PtyProxy(int master, int in, int out) : master_(master), in_(in), out_(out) {
  if (::isatty(in_) && ::tcgetattr(in_, &saved_) == 0) {
    termios raw = saved_;
    ::cfmakeraw(&raw);
    if (::tcsetattr(in_, TCSANOW, &raw) == 0) restore_ = true;
    resize();
  }
}

PtyProxy::~PtyProxy() {
  if (restore_) ::tcsetattr(in_, TCSANOW, &saved_);
}

std::vector<int> PtyProxy::poll_fds() const {
  std::vector<int> fds{master_};
  if (in_open_) fds.push_back(in_);
  return fds;
}

void PtyProxy::resize() {
  winsize ws{};
  if (::isatty(in_) && ::ioctl(in_, TIOCGWINSZ, &ws) == 0) ::ioctl(master_, TIOCSWINSZ, &ws);
}

bool PtyProxy::pump() {
  char buf[16384];
  pollfd fds[2] = {{master_, POLLIN, 0}, {in_open_ ? in_ : -1, POLLIN, 0}};
  if (::poll(fds, 2, 0) < 0) return errno == EINTR;
  if (fds[1].revents & (POLLIN | POLLHUP | POLLERR)) {
    ssize_t n = ::read(in_, buf, sizeof buf);
    if (n > 0) {
      write_all(master_, buf, static_cast<size_t>(n));
    } else if (n == 0 || (errno != EINTR && errno != EAGAIN)) {
      // Our stdin ended: pass EOF on as the terminal's EOF character.
      in_open_ = false;
      const char eot = 4;
      write_all(master_, &eot, 1);
    }
  }
  if (fds[0].revents & (POLLIN | POLLHUP | POLLERR)) {
    ssize_t n = ::read(master_, buf, sizeof buf);
    if (n > 0) {
      write_all(out_, buf, static_cast<size_t>(n));
      return true;
    }
    if (n == 0 || (errno != EINTR && errno != EAGAIN)) return false;  // EIO: slave side gone
  }
  return true;
}

void proxy_pty(int master, int in, int out, int stop_fd) {
  PtyProxy proxy(master, in, out);
  for (;;) {
    std::vector<pollfd> fds;
    for (int fd : proxy.poll_fds()) fds.push_back({fd, POLLIN, 0});
    if (stop_fd >= 0) fds.push_back({stop_fd, POLLIN, 0});
    if (retry_eintr([&] { return ::poll(fds.data(), fds.size(), -1); }) < 0) {
      throw_errno("console: poll");
    }
    if (stop_fd >= 0 && fds.back().revents) {
      while (proxy.pump()) {  // drain what the container already wrote
        pollfd m{master, POLLIN, 0};
        if (::poll(&m, 1, 0) <= 0) break;
      }
      return;
    }
    if (!proxy.pump()) return;
  }
}

}  // namespace crx::linux_
