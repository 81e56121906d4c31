// When to stop pre-copy rounds: pure logic, fed with the bytes of memory
// each round moved (as the destination's page server counted them).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "migrate/config.hpp"

namespace crx::migrate {

class PreCopyPlanner {
 public:
  explicit PreCopyPlanner(PreCopyPolicy policy);

  // True while another pre-dump round is worth running.
  bool want_another_round() const;
  // The memory bytes the round just finished moved.
  void record_round(uint64_t dirty_bytes);

  int rounds_done() const { return static_cast<int>(rounds_.size()); }
  const std::vector<uint64_t>& rounds() const { return rounds_; }
  // Why rounds stopped ("max rounds (3) reached", "dirty set stopped
  // shrinking: 10 MiB -> 9.5 MiB (5% < 20%)", "nothing dirty"); empty
  // while rounds may continue.
  const std::string& stop_reason() const { return stop_reason_; }

 private:
  PreCopyPolicy policy_;
  std::vector<uint64_t> rounds_;
  std::string stop_reason_;
};

// "1.5 MiB", "812 B".
std::string human_bytes(uint64_t bytes);

}  // namespace crx::migrate
