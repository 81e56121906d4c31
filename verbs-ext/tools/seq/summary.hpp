// What a run reports: one JSON line on stdout at the end, and optional
// progress lines on stderr while it runs.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "seq/checker.hpp"
#include "seq/options.hpp"

namespace crx::verbs_seq {

// One stall longer than --stall-list: when it ended (CLOCK_REALTIME, so a
// test can line it up with other machines' logs), its length as counted for
// max_stall_s (steps capped at 1 s) and as the plain CLOCK_MONOTONIC
// difference (the two differ only if the loop did not run for over a second).
struct Stall {
  double end_unix_s = 0;
  double seconds = 0;
  double raw_seconds = 0;
};

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
  // Sender: the longest wait of any one QP for its next completion while it
  // had sends outstanding (max_stall_s ends at the first completion of any
  // QP); < 0 = not measured (receiver, idle).
  double max_qp_stall_s = -1;
  bool stalls_listed = false;  // --stall-list given: "stalls" is printed, maybe empty
  std::vector<Stall> stalls;
  size_t mr_size = 0;         // --mr-size
  uint64_t mr_remote_passes = 0;  // --mr-remote-write: passes completed / announced
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
