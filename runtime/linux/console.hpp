// Terminals for process.terminal=true, and fd passing over unix sockets.
//
// runc's --console-socket protocol: the container side opens a pty (from the
// container's own devpts, i.e. after /dev/pts is mounted), connects to the
// socket (connect before pivot_root, the path is a host path), sends the
// master with SCM_RIGHTS and the pty's name as payload, then makes the slave
// its controlling terminal and stdio. Call order in the container child:
//   UniqueFd sock = connect_unix_socket(console_socket, "console socket");  // before pivot_root
//   ... mounts, pivot_root ...
//   std::string slave; UniqueFd master = open_pty(&slave, spec.process.console_size);
//   send_fd(sock.get(), master.get(), slave, "console socket");
//   master.reset();
//   use_console_as_stdio(slave);   // setsid + TIOCSCTTY + dup2 0/1/2
// For foreground `crx run` with terminal=true crx itself is the receiver:
// recv_fd() the master and proxy_pty() it to crx's own stdio.
#pragma once
#include <termios.h>

#include <optional>
#include <string>
#include <vector>

#include "common/unique_fd.hpp"
#include "spec/spec.hpp"

namespace crx::linux_ {

// posix_openpt/grantpt/unlockpt; *slave_name = ptsname ("/dev/pts/N").
// The master is O_CLOEXEC; its window size is set when size is given.
UniqueFd open_pty(std::string* slave_name,
                  const std::optional<spec::ConsoleSize>& size = std::nullopt);
void set_window_size(int tty_fd, unsigned height, unsigned width);

// Opens the slave, starts a new session if needed, makes it the controlling
// terminal and dup2s it onto 0, 1 and 2.
void use_console_as_stdio(const std::string& slave_name);

// Connects a SOCK_STREAM unix socket; `what` names it in errors.
UniqueFd connect_unix_socket(const std::string& path, const std::string& what);
// Sends one fd with SCM_RIGHTS and `payload` as the message bytes.
void send_fd(int sock_fd, int fd, const std::string& payload, const std::string& what);
// Receives one fd sent by send_fd; *payload (optional) gets the message bytes.
UniqueFd recv_fd(int sock_fd, std::string* payload = nullptr);

// --console-socket in one call: connect, send master with the pty name.
void send_console_fd(const std::string& socket_path, int master_fd, const std::string& name);
inline UniqueFd recv_console_fd(int sock_fd, std::string* name = nullptr) {
  return recv_fd(sock_fd, name);
}

// Moves bytes between a pty master and crx's own stdio for foreground
// `crx run` with terminal=true. While alive, a terminal `in` is in raw mode
// (restored by the destructor). Integrates into the caller's poll loop:
// watch poll_fds() for POLLIN, call pump() when any is readable, call
// resize() on SIGWINCH.
class PtyProxy {
 public:
  PtyProxy(int master, int in, int out);
  ~PtyProxy();
  PtyProxy(const PtyProxy&) = delete;
  PtyProxy& operator=(const PtyProxy&) = delete;

  std::vector<int> poll_fds() const;
  // Copies what is available without blocking on reads. Returns false once
  // the master reports EOF/EIO (every slave fd closed): the session is over.
  bool pump();
  // Copies the window size of `in` (if a terminal) to the pty.
  void resize();

 private:
  int master_, in_, out_;
  bool in_open_ = true;
  bool restore_ = false;
  termios saved_{};
};

// A simple loop around PtyProxy: runs until the master closes or stop_fd
// (if >= 0) becomes readable.
void proxy_pty(int master, int in, int out, int stop_fd = -1);

}  // namespace crx::linux_
