// A Ctrl-C that ends a pre-copy round while it runs, not after it.
//
// crx migrate polls its cancel flag (SIGINT/SIGTERM, cmd/stop_signals.hpp)
// between steps. A pre-copy round is one step that can take minutes: CRIU's
// pre-dump writes the pages through a blocking socket at whatever speed
// the link has. While a CancelWatch lives, a set flag shuts the round's
// page channel down both ways (shutdown(2): every descriptor of that socket,
// the page filter's copy included, sees it at once), so CRIU's pre-dump
// fails within a poll interval and the sender rolls back. A pre-dump
// leaves the container running whatever ends it, so nothing needs undoing
// on the source. The final round is not watched: the container is frozen
// then, and the rollback point after it (the RestoreOk) comes soon.
#pragma once
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <mutex>
#include <thread>

namespace crx::migrate {

class CancelWatch {
 public:
  // Watches `cancel` (null: nothing to watch, no thread) every `interval`;
  // once it is set, shuts `socket` down. The caller keeps owning `socket`.
  CancelWatch(const std::atomic<bool>* cancel, int socket,
              std::chrono::milliseconds interval = std::chrono::milliseconds(50));
  ~CancelWatch();  // stops and joins the thread
  CancelWatch(const CancelWatch&) = delete;
  CancelWatch& operator=(const CancelWatch&) = delete;

  // Whether it shut the socket down.
  bool fired() const { return fired_.load(); }

 private:
  void run(const std::atomic<bool>* cancel, int socket, std::chrono::milliseconds interval);

  std::mutex m_;
  std::condition_variable cv_;
  bool stop_ = false;  // under m_
  std::atomic<bool> fired_{false};
  std::thread thread_;
};

}  // namespace crx::migrate
