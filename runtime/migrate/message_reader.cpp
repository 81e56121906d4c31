#include "migrate/message_reader.hpp"

#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <cstring>
#include <string>

#include "common/error.hpp"
#include "common/retry_eintr.hpp"

namespace crx::migrate {

MessageReader::MessageReader(int fd, size_t max_message)
    : fd_(fd), max_message_(max_message),
      buf_(std::make_unique_for_overwrite<char[]>(max_message)) {}

bool MessageReader::receive(const char* what) {
  iovec iov{buf_.get(), max_message_};
  msghdr m{};
  m.msg_iov = &iov;
  m.msg_iovlen = 1;
  ssize_t n = retry_eintr([&] { return ::recvmsg(fd_, &m, 0); });
  if (n < 0) throw_errno(what);
  // A message cut to the buffer (a stream socket has none to cut).
  if (m.msg_flags & MSG_TRUNC)
    throw Error(std::string(what) + ": a message longer than " + std::to_string(max_message_) +
                    " bytes",
                Cause::Invalid);
  begin_ = 0;
  end_ = static_cast<size_t>(n);
  return n > 0;
}

bool MessageReader::read_exact(void* buf, size_t len, const char* what, bool at_boundary) {
  auto* p = static_cast<char*>(buf);
  size_t got = 0;
  while (got < len) {
    if (begin_ < end_) {
      const size_t n = std::min(end_ - begin_, len - got);
      std::memcpy(p + got, buf_.get() + begin_, n);
      begin_ += n;
      got += n;
      continue;
    }
    // No message can be longer than what is still wanted: it goes where it
    // belongs, without a copy (a page of CRIU's, most reads).
    if (len - got > max_message_) {
      ssize_t n = retry_eintr([&] { return ::recv(fd_, p + got, len - got, 0); });
      if (n < 0) throw_errno(what);
      if (n > 0) {
        got += static_cast<size_t>(n);
        continue;
      }
    } else if (receive(what)) {
      continue;
    }
    if (at_boundary && got == 0) return false;
    throw Error(std::string(what) + ": the stream ended inside a record", Cause::IO);
  }
  return true;
}

bool MessageReader::readable_now() {
  if (begin_ < end_) return true;
  pollfd p{fd_, POLLIN, 0};
  int n = retry_eintr([&] { return ::poll(&p, 1, 0); });
  if (n < 0) throw_errno("polling a message socket");
  return n > 0;
}

}  // namespace crx::migrate
