#include "migrate/cancel_watch.hpp"

#include <sys/socket.h>

namespace crx::migrate {

CancelWatch::CancelWatch(const std::atomic<bool>* cancel, int socket,
                         std::chrono::milliseconds interval) {
  if (cancel) thread_ = std::thread([=, this] { run(cancel, socket, interval); });
}

CancelWatch::~CancelWatch() {
  {
    std::lock_guard<std::mutex> lock(m_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void CancelWatch::run(const std::atomic<bool>* cancel, int socket,
                      std::chrono::milliseconds interval) {
  std::unique_lock<std::mutex> lock(m_);
  while (!cv_.wait_for(lock, interval, [this] { return stop_; })) {
    if (cancel->load()) {
      // Failing does not matter: a socket that cannot be shut down is
      // one whose round ends anyway.
      ::shutdown(socket, SHUT_RDWR);
      fired_.store(true);
      return;
    }
  }
}

}  // namespace crx::migrate
