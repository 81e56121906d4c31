// What a run reports: one JSON line on stdout at the end, and optional
// progress lines on stderr while it runs.
#pragma once
#include <cstdint>
#include <string>

#include "seq/checker.hpp"
#include "seq/options.hpp"

namespace crx::verbs_seq {

struct Summary {
  Role role = Role::Recv;
  unsigned qps = 0;
  bool srq = false;
  size_t size = 0;
  uint64_t messages = 0;  // data messages completed (send) or received (recv)
  uint64_t bytes = 0;
  SeqCounts seq;          // receiver only, summed over QPs
  uint64_t errors = 0;    // bad completions, corrupt or misrouted messages, stalls
  double elapsed_s = 0;
  double max_stall_s = 0;  // longest wait for a completion while work was pending
  bool interrupted = false;
  std::string first_error;

  bool ok() const { return errors == 0 && seq.clean() && !interrupted; }
  void add_error(std::string what) {
    if (errors++ == 0) first_error = std::move(what);
  }
};

std::string summary_json(const Summary& s);
std::string progress_json(const Summary& s, uint64_t outstanding);

}  // namespace crx::verbs_seq
