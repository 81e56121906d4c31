#include "container/sync.hpp"

#include <sys/socket.h>

#include <cerrno>
#include <cstring>

#include "common/error.hpp"
#include "common/retry_eintr.hpp"

namespace crx::container {

std::pair<SyncChannel, SyncChannel> SyncChannel::make_pair() {
  int fds[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, fds) != 0) throw_errno("socketpair");
  return {SyncChannel(UniqueFd(fds[0])), SyncChannel(UniqueFd(fds[1]))};
}

namespace {

void send_msg(int fd, const SyncMsg& msg) {
  if (retry_eintr([&] { return ::send(fd, &msg, sizeof msg, MSG_NOSIGNAL); }) < 0) {
    throw_errno("sync channel send");
  }
}

}  // namespace

void SyncChannel::send(SyncType type, int32_t value, const std::string& text) const {
  SyncMsg msg{};
  msg.type = type;
  msg.value = value;
  std::strncpy(msg.text, text.c_str(), sizeof msg.text - 1);
  send_msg(fd_.get(), msg);
}

void SyncChannel::send_error(const std::exception& e) const {
  SyncMsg msg{};
  msg.type = SyncType::Error;
  if (const auto* err = dynamic_cast<const Error*>(&e)) {
    msg.value = err->sys_errno();
    msg.cause = static_cast<int32_t>(err->cause());
  }
  std::strncpy(msg.text, e.what(), sizeof msg.text - 1);
  send_msg(fd_.get(), msg);
}

void SyncChannel::throw_error(const SyncMsg& msg) {
  throw Error(msg.text, static_cast<Cause>(msg.cause), msg.value);
}

bool SyncChannel::receive(SyncMsg& msg) const {
  ssize_t n = retry_eintr([&] { return ::recv(fd_.get(), &msg, sizeof msg, 0); });
  if (n < 0) throw_errno("sync channel receive");
  if (n == 0) return false;
  if (static_cast<size_t>(n) != sizeof msg) throw Error("sync channel: short message");
  msg.text[sizeof msg.text - 1] = 0;
  return true;
}

SyncMsg SyncChannel::expect(SyncType type) const {
  SyncMsg msg;
  if (!receive(msg)) throw Error("container setup: the other side exited unexpectedly");
  if (msg.type == SyncType::Error) throw_error(msg);
  if (msg.type != type) throw Error("container setup: unexpected message " + std::to_string(static_cast<int>(msg.type)));
  return msg;
}

}  // namespace crx::container
