// Monotonic seconds, and the bookkeeping shared by both loops: stall
// detection and periodic progress lines.
#pragma once
#include <time.h>

#include <cstdio>
#include <vector>

#include "seq/summary.hpp"

namespace crx::verbs_seq {

inline double clock_s(clockid_t id) {
  timespec ts;
  clock_gettime(id, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}
inline double now_s() { return clock_s(CLOCK_MONOTONIC); }

// Stall time is accumulated from the loops' wake-ups (at least every 100 ms),
// each step capped at one second: a jump of the monotonic clock, as after a
// CRIU restore on another machine, then costs at most one second instead of
// looking like a stall of hours. A stall ends at a completion: its length is
// measured from the completion before it to that one, so its resolution is
// how fast the loop sees a completion (at once when it sleeps on the
// completion channel or busy-polls), not the 100 ms wake-up period.
class Watch {
 public:
  explicit Watch(const Options& o)
      : stall_timeout_(o.stall_timeout_s), progress_every_(o.progress_s), list_over_(o.stall_list_s) {
    start_ = last_tick_ = began_ = next_progress_ = now_s();
    next_progress_ += progress_every_;
  }
  double start() const { return start_; }
  void completion(double now, bool work_was_pending) {
    tick(now, work_was_pending);
    if (list_over_ > 0 && waited_ > list_over_ && stalls_.size() < kMaxListed)
      stalls_.push_back(Stall{clock_s(CLOCK_REALTIME), waited_, now - began_});
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
  // Seconds since the start counted with the same capped steps: for
  // intervals (e.g. per QP) that must not see a jump of the clock either.
  double capped_clock() const { return capped_; }
  // Puts max_stall_s and the stall list into the summary.
  void report(Summary& s) const {
    s.max_stall_s = max_stall_;
    s.stalls_listed = list_over_ > 0;
    s.stalls = stalls_;
  }

 private:
  static constexpr size_t kMaxListed = 1000;
  void tick(double now, bool work_pending) {
    double step = now - last_tick_;
    step = step < 0 ? 0 : step > 1 ? 1 : step;
    if (work_pending && waited_ == 0) began_ = last_tick_;
    last_tick_ = now;
    capped_ += step;
    if (!work_pending) return;
    waited_ += step;
    if (waited_ > max_stall_) max_stall_ = waited_;
  }
  double stall_timeout_, progress_every_, list_over_;
  double start_, last_tick_, began_, next_progress_;
  double waited_ = 0;
  double max_stall_ = 0;
  double capped_ = 0;
  std::vector<Stall> stalls_;
};

// Set by SIGINT/SIGTERM: the loops stop, report, and exit non-zero.
extern volatile int g_stop_signal;
// Set by SIGUSR1: the sender ends as if --duration had passed (FIN on every
// QP, normal end); idle ends normally. A receiver ignores it.
extern volatile int g_finish_signal;

}  // namespace crx::verbs_seq
