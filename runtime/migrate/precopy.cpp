#include "migrate/precopy.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>

#include "common/error.hpp"

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

std::string human_rate(double bytes_per_second) {
  if (bytes_per_second < 0) bytes_per_second = 0;
  return human_bytes(static_cast<uint64_t>(bytes_per_second + 0.5)) + "/s";
}

std::string pre_copy_arg_error(const std::string& v) {
  if (v == "auto") return {};
  bool digits = !v.empty() && v.size() <= 3 &&
                std::all_of(v.begin(), v.end(), [](char c) { return c >= '0' && c <= '9'; });
  if (digits && std::atoi(v.c_str()) <= 64) return {};
  return "expected a number of rounds 0..64 or \"auto\", got \"" + v + "\"";
}

void apply_pre_copy_arg(PreCopyPolicy& p, const std::string& v) {
  std::string why = pre_copy_arg_error(v);
  if (!why.empty()) throw Error("--pre-copy: " + why);
  if (v == "auto") {
    p.adaptive = true;
  } else {
    p.adaptive = false;
    p.max_rounds = std::atoi(v.c_str());
  }
}

PreCopyPlanner::PreCopyPlanner(PreCopyPolicy policy) : policy_(policy) {
  if (!policy_.adaptive && policy_.max_rounds <= 0) stop_reason_ = "pre-copy disabled";
}

bool PreCopyPlanner::want_another_round() const { return stop_reason_.empty(); }

std::vector<uint64_t> PreCopyPlanner::rounds() const {
  std::vector<uint64_t> out;
  for (const auto& r : rounds_) out.push_back(r.bytes);
  return out;
}

std::optional<RoundEstimate> PreCopyPlanner::last_estimate() const {
  if (estimates_.empty()) return std::nullopt;
  return estimates_.back();
}

uint64_t PreCopyPlanner::all_memory() const {
  uint64_t all = 0;
  for (const auto& r : rounds_) all = std::max(all, r.bytes);
  return all;
}

// A round takes round_fixed + bytes / bandwidth. With two rounds whose
// sizes differ by 2x or more, the line through the smallest and the
// biggest gives the fixed part; when that fails (one size only, or the
// link changed between them: a slope that is not positive, an intercept
// outside the round) the test bed's value stands.
double PreCopyPlanner::round_fixed() const {
  const RoundSample* lo = nullptr;
  const RoundSample* hi = nullptr;
  for (const auto& r : rounds_) {
    if (r.seconds <= 0) continue;
    if (!lo || r.bytes < lo->bytes) lo = &r;
    if (!hi || r.bytes > hi->bytes) hi = &r;
  }
  if (lo && hi && hi->bytes >= 2 * lo->bytes && hi->seconds > lo->seconds) {
    double slope = (hi->seconds - lo->seconds) / static_cast<double>(hi->bytes - lo->bytes);
    double fixed = lo->seconds - slope * static_cast<double>(lo->bytes);
    if (fixed >= 0 && fixed <= lo->seconds) return fixed;
  }
  return kRoundFixedSeconds;
}

// The latest round big enough to be about the link (else the biggest),
// its memory over its time less the fixed part (at most 3/4 of its time:
// a fixed part learned badly must not make the link look infinite).
double PreCopyPlanner::bandwidth(double fixed) const {
  const RoundSample* pick = nullptr;
  for (auto it = rounds_.rbegin(); it != rounds_.rend() && !pick; ++it)
    if (it->bytes >= kBandwidthSampleBytes && it->seconds > 0) pick = &*it;
  if (!pick) {
    for (const auto& r : rounds_)
      if (r.seconds > 0 && r.bytes > 0 && (!pick || r.bytes > pick->bytes)) pick = &r;
  }
  if (!pick) return 0;
  return pick->bytes / (pick->seconds - std::min(fixed, 0.75 * pick->seconds));
}

namespace {

std::string secs(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f s", s);
  return buf;
}

}  // namespace

void PreCopyPlanner::record_round(const RoundSample& s) {
  rounds_.push_back(s);
  RoundEstimate e;
  if (s.seconds > 0) e.throughput = s.bytes / s.seconds;
  e.round_fixed = round_fixed();
  e.bandwidth = bandwidth(e.round_fixed);
  if (rounds_.size() >= 2 && s.since_prev_snapshot > 0) e.dirty_rate = s.bytes / s.since_prev_snapshot;
  if (rounds_.size() >= 2 && e.bandwidth > 0 && s.since_prev_snapshot > 0) {
    // The dirty set at the freeze: what the dirty rate adds from this
    // round's snapshot to the freeze that follows it (about this round's
    // time), at most all memory.
    double p = std::min(e.dirty_rate * s.seconds, static_cast<double>(all_memory()));
    // A round that did not shrink against the one before found the
    // container's working set dirty again: the dirty rate measured is then
    // capped by that set's size, not by the writing, and the final round
    // carries the set again (measured on the test bed: 32 MiB rewritten
    // every 50 ms, a "dirty rate" of 7.4 MiB/s predicted 20.7 MiB, and the
    // final round carried 32.0 MiB).
    uint64_t before = rounds_[rounds_.size() - 2].bytes;
    if (s.bytes > (1 - policy_.min_shrink_percent / 100) * static_cast<double>(before))
      p = std::max(p, static_cast<double>(s.bytes));
    e.predicted_final_bytes = static_cast<uint64_t>(p + 0.5);
    e.predicted_downtime = p / e.bandwidth + fixed_downtime();
  }
  estimates_.push_back(e);
  if (!stop_reason_.empty()) return;
  if (policy_.adaptive && e.bandwidth > 0) {
    stop_auto();
  } else {
    stop_fixed();
  }
}

double PreCopyPlanner::fixed_downtime() const {
  return policy_.fixed_downtime_seconds + kRestoreSecondsPerMiB * (all_memory() / 1048576.0);
}

void PreCopyPlanner::stop_fixed() {
  uint64_t dirty = rounds_.back().bytes;
  int cap = policy_.adaptive ? kAutoMaxRounds : policy_.max_rounds;
  if (dirty == 0 && rounds_.size() >= 2) {
    stop_reason_ = "nothing dirty";
    return;
  }
  if (rounds_.size() >= 2) {
    uint64_t prev = rounds_[rounds_.size() - 2].bytes;
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
  if (static_cast<int>(rounds_.size()) >= cap) {
    stop_reason_ = "max rounds (" + std::to_string(cap) + ") reached";
  }
}

void PreCopyPlanner::stop_auto() {
  const RoundSample& s = rounds_.back();
  const RoundEstimate& e = estimates_.back();
  const double bw = e.bandwidth;
  const double fixed = fixed_downtime();
  const double negligible = kNegligibleShare * fixed;
  const int n = rounds_done();
  char buf[320];
  if (n == 1) {
    // No dirty rate yet: a second round measures it, unless even all the
    // memory moving again in the final round would not matter.
    double t = s.bytes / bw;
    if (t < negligible) {
      std::snprintf(buf, sizeof buf,
                    "all memory (%s) would take %s at %s, under %.0f%% of the fixed downtime %s: "
                    "no round can matter",
                    human_bytes(s.bytes).c_str(), secs(t).c_str(), human_rate(bw).c_str(),
                    kNegligibleShare * 100, secs(fixed).c_str());
      stop_reason_ = buf;
    }
    return;
  }
  if (s.bytes == 0) {
    stop_reason_ = "nothing dirty";
    return;
  }
  if (!e.predicted_final_bytes) {  // no interval measured: fixed rules
    stop_fixed();
    return;
  }
  const double p_now = static_cast<double>(*e.predicted_final_bytes);
  const double t_now = p_now / bw;
  if (t_now < negligible) {
    std::snprintf(buf, sizeof buf,
                  "predicted final round %s takes %s at %s, under %.0f%% of the fixed downtime %s",
                  human_bytes(*e.predicted_final_bytes).c_str(), secs(t_now).c_str(),
                  human_rate(bw).c_str(), kNegligibleShare * 100, secs(fixed).c_str());
    stop_reason_ = buf;
    return;
  }
  if (e.dirty_rate >= kConvergeRatio * bw) {
    std::snprintf(buf, sizeof buf, "dirty rate %s >= %.1fx bandwidth %s: rounds cannot converge",
                  human_rate(e.dirty_rate).c_str(), kConvergeRatio, human_rate(bw).c_str());
    stop_reason_ = buf;
    return;
  }
  uint64_t prev = rounds_[rounds_.size() - 2].bytes;
  double shrink = prev == 0 ? 0.0 : 100.0 * (static_cast<double>(prev) - static_cast<double>(s.bytes)) /
                                        static_cast<double>(prev);
  if (shrink < policy_.min_shrink_percent) {
    // Measured, not predicted: the dirty rate is then often capped by the
    // size of what the container rewrites, so no prediction is trusted.
    std::snprintf(buf, sizeof buf,
                  "dirty set stopped shrinking: %s -> %s (%.0f%% < %.0f%%); dirty rate %s, "
                  "bandwidth %s",
                  human_bytes(prev).c_str(), human_bytes(s.bytes).c_str(), std::max(shrink, 0.0),
                  policy_.min_shrink_percent, human_rate(e.dirty_rate).c_str(),
                  human_rate(bw).c_str());
    stop_reason_ = buf;
    return;
  }
  // Another round: a round's fixed work plus the predicted dirty set at
  // the bandwidth; the final round then carries what the dirty rate adds
  // meanwhile.
  double t_next = e.round_fixed + t_now;
  double p_next = std::min(e.dirty_rate * t_next, static_cast<double>(all_memory()));
  double cut = 100.0 * (p_now - p_next) / p_now;
  if (cut < policy_.min_shrink_percent) {
    std::snprintf(buf, sizeof buf,
                  "converged: another round would cut the final round only from %s to %s "
                  "(%.0f%% < %.0f%%)",
                  human_bytes(static_cast<uint64_t>(p_now + 0.5)).c_str(),
                  human_bytes(static_cast<uint64_t>(p_next + 0.5)).c_str(), std::max(cut, 0.0),
                  policy_.min_shrink_percent);
    stop_reason_ = buf;
    return;
  }
  if (n >= kAutoMaxRounds) {
    stop_reason_ = "max rounds (" + std::to_string(kAutoMaxRounds) + ") reached";
  }
}

}  // namespace crx::migrate
