#include "container/sync.hpp"

#include <sys/socket.h>

#include <cerrno>
#include <cstring>

#include "common/error.hpp"

namespace crx::container {

std::pair<SyncChannel, SyncChannel> SyncChannel::make_pair() {
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, fds) != 0) throw_errno("socketpair");
  return {SyncChannel(UniqueFd(fds[0])), SyncChannel(UniqueFd(fds[1]))};
}

void SyncChannel::send(SyncType type, int32_t value, const std::string& text) const {
  SyncMsg msg{};
  msg.type = type;
  msg.value = value;
  std::strncpy(msg.text, text.c_str(), sizeof msg.text - 1);
  while (::send(fd_.get(), &msg, sizeof msg, MSG_NOSIGNAL) < 0) {
    if (errno != EINTR) throw_errno("sync channel send");
  }
}

bool SyncChannel::receive(SyncMsg& msg) const {
  for (;;) {
    ssize_t n = ::recv(fd_.get(), &msg, sizeof msg, 0);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw_errno("sync channel receive");
    if (n == 0) return false;
    if (static_cast<size_t>(n) != sizeof msg) throw Error("sync channel: short message");
    msg.text[sizeof msg.text - 1] = 0;
    return true;
  }
}

SyncMsg SyncChannel::expect(SyncType type) const {
  SyncMsg msg;
  if (!receive(msg)) throw Error("container setup: the other side exited unexpectedly");
  if (msg.type == SyncType::Error) throw Error(msg.text);
  if (msg.type != type) throw Error("container setup: unexpected message " + std::to_string(static_cast<int>(msg.type)));
  return msg;
}

}  // namespace crx::container
