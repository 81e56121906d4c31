#include "seq/checker.hpp"

namespace crx::verbs_seq {

void SeqChecker::on_message(uint64_t seq) {
  ++counts_.received;
  if (seq == expected_) {
    ++counts_.in_order;
    ++expected_;
  } else if (seq > expected_) {
    ++counts_.out_of_order;
    gaps_[expected_] = seq;
    expected_ = seq + 1;
  } else if (take_from_gap(seq)) {
    ++counts_.out_of_order;
  } else {
    ++counts_.duplicates;
  }
}

bool SeqChecker::take_from_gap(uint64_t seq) {
  auto it = gaps_.upper_bound(seq);
  if (it == gaps_.begin()) return false;
  --it;
  uint64_t first = it->first, last = it->second;
  if (seq >= last) return false;
  gaps_.erase(it);
  if (first < seq) gaps_[first] = seq;
  if (seq + 1 < last) gaps_[seq + 1] = last;
  return true;
}

uint64_t SeqChecker::gap_size() const {
  uint64_t n = 0;
  for (auto [first, last] : gaps_) n += last - first;
  return n;
}

void SeqChecker::finish(uint64_t total) {
  finished_ = true;
  // Numbers at or above total were never sent: count them, and do not count
  // the holes above total as missing.
  uint64_t beyond = 0;
  if (expected_ > total) {
    for (auto it = gaps_.begin(); it != gaps_.end();) {
      if (it->first >= total) {
        it = gaps_.erase(it);
      } else {
        if (it->second > total) it->second = total;
        ++it;
      }
    }
    // Messages seen in [total, expected): everything there that is not a hole.
    beyond = counts_.received - counts_.duplicates;  // distinct numbers seen
    uint64_t distinct_below = total - gap_size();
    beyond = beyond > distinct_below ? beyond - distinct_below : 0;
  }
  counts_.beyond_total = beyond;
  counts_.missing = gap_size() + (total > expected_ ? total - expected_ : 0);
}

}  // namespace crx::verbs_seq
