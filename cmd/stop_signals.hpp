// SIGINT/SIGTERM as a flag for the long-running migration commands: while a
// StopSignals lives, the signals set stop_requested() instead of killing
// crx, so the command can roll back or finish cleanly. No SA_RESTART:
// blocking waits wake up with EINTR. The previous handlers come back when it
// goes away.
#pragma once
#include <atomic>
#include <csignal>

namespace crx::cmd {

class StopSignals {
 public:
  StopSignals() {
    struct sigaction sa{};
    sa.sa_handler = [](int) { flag().store(true); };
    sigemptyset(&sa.sa_mask);
    ::sigaction(SIGINT, &sa, &old_int_);
    ::sigaction(SIGTERM, &sa, &old_term_);
  }
  ~StopSignals() {
    ::sigaction(SIGINT, &old_int_, nullptr);
    ::sigaction(SIGTERM, &old_term_, nullptr);
  }
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

  // The flag itself, for code that polls an std::atomic<bool>*.
  static std::atomic<bool>& flag() {
    static std::atomic<bool> stop{false};
    return stop;
  }
  static bool stop_requested() { return flag().load(); }

 private:
  struct sigaction old_int_{}, old_term_{};
};

}  // namespace crx::cmd
