// Per-QP bookkeeping of received sequence numbers: decides for every
// arriving number whether it is in order, a duplicate, or out of order, and
// at the end how many never arrived. Pure logic, unit-tested on the host.
#pragma once
#include <cstdint>
#include <map>

namespace crx::verbs_seq {

struct SeqCounts {
  uint64_t received = 0;      // data messages seen, duplicates included
  uint64_t in_order = 0;      // arrived exactly when expected
  uint64_t out_of_order = 0;  // arrived ahead of a gap, or late into one
  uint64_t duplicates = 0;    // a number seen before
  uint64_t missing = 0;       // known after finish(): never arrived
  uint64_t beyond_total = 0;  // numbers >= the total the sender announced

  bool clean() const {
    return out_of_order == 0 && duplicates == 0 && missing == 0 && beyond_total == 0;
  }
};

class SeqChecker {
 public:
  void on_message(uint64_t seq);
  // The sender announced that it sent `total` data messages (0..total-1).
  void finish(uint64_t total);
  bool finished() const { return finished_; }
  uint64_t expected() const { return expected_; }
  const SeqCounts& counts() const { return counts_; }

 private:
  bool take_from_gap(uint64_t seq);
  uint64_t gap_size() const;

  uint64_t expected_ = 0;
  std::map<uint64_t, uint64_t> gaps_;  // [first, last) ranges not yet seen
  SeqCounts counts_;
  bool finished_ = false;
};

}  // namespace crx::verbs_seq
