// A relay between two stream sockets that alters the client->server bytes
// on request: flips, drops or injects one byte at an offset of that
// stream. For the migration's TLS tests (an on-path attacker).
#pragma once
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <thread>

#include "common/unique_fd.hpp"

namespace crx::test {

class TamperRelay {
 public:
  enum class Action { Flip, Drop, Inject };

  // near: the relay's end facing the client; far: facing the server.
  TamperRelay(crx::UniqueFd near, crx::UniqueFd far) : near_(std::move(near)), far_(std::move(far)) {
    thread_ = std::thread([this] { run(); });
  }
  ~TamperRelay() {
    stop_ = true;
    thread_.join();
  }
  TamperRelay(const TamperRelay&) = delete;
  TamperRelay& operator=(const TamperRelay&) = delete;

  // Client->server bytes forwarded so far.
  uint64_t forwarded() const { return forwarded_; }
  // Alters the byte at this offset of the client->server stream.
  void tamper_at(uint64_t offset, Action a) {
    action_ = a;
    at_ = static_cast<int64_t>(offset);
  }

 private:
  void run() {
    char buf[65536];
    bool up_open = true, down_open = true;
    while (!stop_ && (up_open || down_open)) {
      struct pollfd p[2] = {{up_open ? near_.get() : -1, POLLIN, 0},
                            {down_open ? far_.get() : -1, POLLIN, 0}};
      if (::poll(p, 2, 50) <= 0) continue;
      if (p[0].revents) {
        ssize_t n = ::read(near_.get(), buf, sizeof buf);
        if (n <= 0) {
          up_open = false;
          ::shutdown(far_.get(), SHUT_WR);
        } else {
          forward_up(buf, static_cast<size_t>(n));
        }
      }
      if (p[1].revents) {
        ssize_t n = ::read(far_.get(), buf, sizeof buf);
        if (n <= 0) {
          down_open = false;
          ::shutdown(near_.get(), SHUT_WR);
        } else {
          write_all(near_.get(), buf, static_cast<size_t>(n));
        }
      }
    }
  }

  void forward_up(char* buf, size_t n) {
    int64_t at = at_;
    int64_t start = static_cast<int64_t>(forwarded_);
    forwarded_ += n;
    if (at < start || at >= start + static_cast<int64_t>(n)) {
      write_all(far_.get(), buf, n);
      return;
    }
    at_ = -1;
    size_t i = static_cast<size_t>(at - start);
    switch (action_.load()) {
      case Action::Flip:
        buf[i] ^= 0x01;
        write_all(far_.get(), buf, n);
        break;
      case Action::Drop:
        write_all(far_.get(), buf, i);
        write_all(far_.get(), buf + i + 1, n - i - 1);
        break;
      case Action::Inject: {
        char x = 0x5a;
        write_all(far_.get(), buf, i);
        write_all(far_.get(), &x, 1);
        write_all(far_.get(), buf + i, n - i);
        break;
      }
    }
  }

  static void write_all(int fd, const char* p, size_t n) {
    while (n > 0) {
      ssize_t w = ::send(fd, p, n, MSG_NOSIGNAL);
      if (w <= 0) return;
      p += w;
      n -= static_cast<size_t>(w);
    }
  }

  crx::UniqueFd near_, far_;
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> forwarded_{0};
  std::atomic<int64_t> at_{-1};
  std::atomic<Action> action_{Action::Flip};
  std::thread thread_;
};

}  // namespace crx::test
