// Monotonic seconds, and the bookkeeping shared by both loops: stall
// detection and periodic progress lines.
#pragma once
#include <time.h>

#include <cstdio>

#include "seq/summary.hpp"

namespace crx::verbs_seq {

inline double now_s() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

// Stall time is accumulated from the loops' wake-ups (at least every 100 ms),
// each step capped at one second: a jump of the monotonic clock, as after a
// CRIU restore on another machine, then costs at most one second instead of
// looking like a stall of hours.
class Watch {
 public:
  explicit Watch(const Options& o) : stall_timeout_(o.stall_timeout_s), progress_every_(o.progress_s) {
    start_ = last_tick_ = next_progress_ = now_s();
    next_progress_ += progress_every_;
  }
  double start() const { return start_; }
  void completion(double now, bool work_was_pending) {
    tick(now, work_was_pending);
    waited_ = 0;
  }
  // Called whenever nothing completed; true when the stall limit is exceeded.
  bool stalled(double now, bool work_pending) {
    tick(now, work_pending);
    if (!work_pending) waited_ = 0;
    return stall_timeout_ > 0 && waited_ > stall_timeout_;
  }
  double since_completion() const { return waited_; }
  void maybe_progress(double now, Summary& s, uint64_t outstanding) {
    if (progress_every_ <= 0 || now < next_progress_) return;
    next_progress_ = now + progress_every_;
    s.elapsed_s = now - start_;
    std::fprintf(stderr, "%s\n", progress_json(s, outstanding).c_str());
    std::fflush(stderr);
  }
  double max_stall() const { return max_stall_; }

 private:
  void tick(double now, bool work_pending) {
    double step = now - last_tick_;
    last_tick_ = now;
    if (!work_pending) return;
    waited_ += step < 0 ? 0 : step > 1 ? 1 : step;
    if (waited_ > max_stall_) max_stall_ = waited_;
  }
  double stall_timeout_, progress_every_;
  double start_, last_tick_, next_progress_;
  double waited_ = 0;
  double max_stall_ = 0;
};

// Set by SIGINT/SIGTERM: the loops stop, report, and exit non-zero.
extern volatile int g_stop_signal;

}  // namespace crx::verbs_seq
