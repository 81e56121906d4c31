// When to stop pre-copy rounds: pure logic, fed after each round with
// the bytes of memory it moved (as the destination's page server counted
// them), its wall time and the time since the previous round's snapshot.
//
// Fixed mode (`--pre-copy N`): at most N rounds, fewer when a round shrank
// the dirty set by less than min_shrink_percent or nothing was dirty.
// Adaptive mode (`--pre-copy auto`): the pre-copy arithmetic — downtime ≈
// dirty bytes at the freeze / link bandwidth + fixed work — with the
// dirty rate and the bandwidth measured round by round; see the pre-copy
// section of runtime/migrate/README.md for the model and its constants.
// Both modes estimate, after every round, what the final round would
// carry and how long the downtime would be if pre-copy stopped there.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "migrate/config.hpp"

namespace crx::migrate {

// One finished pre-copy round as the sender measured it.
struct RoundSample {
  uint64_t bytes = 0;  // memory moved
  double seconds = 0;  // wall time of the round (round start to its ack)
  // From the previous round's snapshot (its CRIU start) to this one's;
  // 0 for the first round: it moves everything, no dirty rate yet.
  double since_prev_snapshot = 0;
};

// What the planner made of a round.
struct RoundEstimate {
  double throughput = 0;      // bytes/s this round achieved (bytes / wall time)
  double bandwidth = 0;       // the link bandwidth estimate after it (bytes/s)
  double round_fixed = 0;     // a round's time besides its memory (s), estimated
  double dirty_rate = 0;      // bytes/s dirtied since the previous snapshot (0: unknown)
  // If pre-copy stopped after this round: the final round's memory and the
  // downtime (memory / bandwidth + fixed). Unknown after round 1 (no dirty
  // rate yet) and when nothing could be measured.
  std::optional<uint64_t> predicted_final_bytes;
  std::optional<double> predicted_downtime;
};

// The adaptive policy's constants (README, "Pre-copy").
inline constexpr int kAutoMaxRounds = 8;
// A round that moved less than this says little about the link: its time
// is mostly CRIU's fixed work.
inline constexpr uint64_t kBandwidthSampleBytes = 4ull << 20;
// A pre-dump round's time besides its memory (CRIU's start, seizing and
// parsing the tasks, the page channel's set-up), until two rounds of
// different size let the planner learn it (test bed value, README).
inline constexpr double kRoundFixedSeconds = 0.5;
// Dirty rate at or above this share of the bandwidth: rounds cannot converge.
inline constexpr double kConvergeRatio = 0.8;
// A final round whose memory takes less than this share of the fixed
// downtime is not worth another round.
inline constexpr double kNegligibleShare = 0.1;
// Restore reads every page, pre-copied or not: the downtime's part that
// grows with the container's memory (all of it, not the dirty set).
inline constexpr double kRestoreSecondsPerMiB = 0.02;

class PreCopyPlanner {
 public:
  explicit PreCopyPlanner(PreCopyPolicy policy);

  // True while another pre-dump round is worth running.
  bool want_another_round() const;
  void record_round(const RoundSample& s);
  // Bytes only (no times): fixed mode's rules; estimates stay empty.
  void record_round(uint64_t dirty_bytes) { record_round(RoundSample{dirty_bytes, 0, 0}); }

  int rounds_done() const { return static_cast<int>(rounds_.size()); }
  std::vector<uint64_t> rounds() const;
  const std::vector<RoundEstimate>& estimates() const { return estimates_; }
  // The estimate after the last round (nullopt before any round).
  std::optional<RoundEstimate> last_estimate() const;
  // Why rounds stopped ("max rounds (3) reached", "dirty set stopped
  // shrinking: 10 MiB -> 9.5 MiB (5% < 20%)", "nothing dirty", or one of
  // auto's reasons with its numbers); empty while rounds may continue.
  const std::string& stop_reason() const { return stop_reason_; }
  const PreCopyPolicy& policy() const { return policy_; }
  // The downtime's part no round changes: policy.fixed_downtime_seconds
  // plus the restore's reading of all memory (the biggest round so far).
  double fixed_downtime() const;

 private:
  void stop_fixed();
  void stop_auto();
  double round_fixed() const;
  double bandwidth(double round_fixed) const;
  uint64_t all_memory() const;

  PreCopyPolicy policy_;
  std::vector<RoundSample> rounds_;
  std::vector<RoundEstimate> estimates_;
  std::string stop_reason_;
};

// The value of `--pre-copy`: "auto" or a round count 0..64 (set into
// policy). Throws Error("--pre-copy: ...") for anything else.
void apply_pre_copy_arg(PreCopyPolicy& policy, const std::string& value);
// "" when value is a valid `--pre-copy`, else why not (for CLI11's check).
std::string pre_copy_arg_error(const std::string& value);

// "1.5 MiB", "812 B".
std::string human_bytes(uint64_t bytes);
// "12.3 MiB/s".
std::string human_rate(double bytes_per_second);

}  // namespace crx::migrate
