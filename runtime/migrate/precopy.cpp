#include "migrate/precopy.hpp"

#include <cstdio>

namespace crx::migrate {

std::string human_bytes(uint64_t bytes) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  char buf[32];
  if (u == 0) {
    std::snprintf(buf, sizeof buf, "%llu B", static_cast<unsigned long long>(bytes));
  } else {
    std::snprintf(buf, sizeof buf, "%.1f %s", v, units[u]);
  }
  return buf;
}

PreCopyPlanner::PreCopyPlanner(PreCopyPolicy policy) : policy_(policy) {
  if (policy_.max_rounds <= 0) stop_reason_ = "pre-copy disabled";
}

bool PreCopyPlanner::want_another_round() const { return stop_reason_.empty(); }

void PreCopyPlanner::record_round(uint64_t dirty) {
  rounds_.push_back(dirty);
  if (!stop_reason_.empty()) return;
  if (dirty == 0 && rounds_.size() >= 2) {
    stop_reason_ = "nothing dirty";
    return;
  }
  if (rounds_.size() >= 2) {
    uint64_t prev = rounds_[rounds_.size() - 2];
    double shrink = prev == 0 ? 0.0 : 100.0 * (static_cast<double>(prev) - static_cast<double>(dirty)) /
                                          static_cast<double>(prev);
    if (shrink < policy_.min_shrink_percent) {
      char buf[160];
      std::snprintf(buf, sizeof buf, "dirty set stopped shrinking: %s -> %s (%.0f%% < %.0f%%)",
                    human_bytes(prev).c_str(), human_bytes(dirty).c_str(), shrink,
                    policy_.min_shrink_percent);
      stop_reason_ = buf;
      return;
    }
  }
  if (static_cast<int>(rounds_.size()) >= policy_.max_rounds) {
    stop_reason_ = "max rounds (" + std::to_string(policy_.max_rounds) + ") reached";
  }
}

}  // namespace crx::migrate
