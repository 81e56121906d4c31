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

class Watch {
 public:
  Watch(const Options& o) : stall_timeout_(o.stall_timeout_s), progress_every_(o.progress_s) {
    start_ = last_completion_ = next_progress_ = now_s();
    next_progress_ += progress_every_;
  }
  double start() const { return start_; }
  void completion(double now, bool work_was_pending) {
    if (work_was_pending) note_wait(now);
    last_completion_ = now;
  }
  // Called whenever nothing completed; true when the stall limit is exceeded.
  bool stalled(double now, bool work_pending) {
    if (!work_pending) {
      last_completion_ = now;
      return false;
    }
    note_wait(now);
    return stall_timeout_ > 0 && now - last_completion_ > stall_timeout_;
  }
  double since_completion(double now) const { return now - last_completion_; }
  void maybe_progress(double now, Summary& s, uint64_t outstanding) {
    if (progress_every_ <= 0 || now < next_progress_) return;
    next_progress_ = now + progress_every_;
    s.elapsed_s = now - start_;
    std::fprintf(stderr, "%s\n", progress_json(s, outstanding).c_str());
    std::fflush(stderr);
  }
  double max_stall() const { return max_stall_; }

 private:
  void note_wait(double now) {
    if (now - last_completion_ > max_stall_) max_stall_ = now - last_completion_;
  }
  double stall_timeout_, progress_every_;
  double start_, last_completion_, next_progress_;
  double max_stall_ = 0;
};

// Set by SIGINT/SIGTERM: the loops stop, report, and exit non-zero.
extern volatile int g_stop_signal;

}  // namespace crx::verbs_seq
