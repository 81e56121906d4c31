// Command line of crx-verbs-seq.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

namespace crx::verbs_seq {

// Idle: no verbs at all, only the memory a receiver would hold (a baseline
// for migration benchmarks: the same container without verbs objects).
enum class Role { Send, Recv, Idle };

struct Options {
  Role role = Role::Recv;
  // Connection set-up over TCP: connect to this host, or listen if empty.
  std::string connect_host;
  std::string bind_address = "0.0.0.0";
  uint16_t port = 18515;
  double setup_timeout_s = 120;

  std::string device;     // empty = first device
  int ib_port = 1;
  int gid_index = -1;     // -1 = first IPv4-mapped GID, else 0

  unsigned qps = 1;
  bool srq = false;           // receiver: all QPs share one SRQ
  size_t size = 64;           // bytes per message
  uint64_t count = 1000;      // messages per QP (ignored with duration)
  double duration_s = 0;      // > 0: send for this long instead of count
  unsigned window = 16;       // outstanding sends (or posted receives) per QP
  double rate = 0;            // messages per second over all QPs, 0 = unlimited
  bool verify_payload = false;
  size_t mr_size = 0;         // > 0: one more MR of this many bytes, every page written
  // recv, > 0: every this many seconds, check every page of the --mr-size
  // MR, then rewrite a sixteenth of them (a stale page after a move fails)
  double mr_rewrite_s = 0;
  // recv, > 0: poll the CQ only every this many seconds, so completions
  // wait in it (what a checkpoint then finds there must come back)
  double poll_every_s = 0;
  // send and recv, > 0: every this many seconds the sender RDMA-WRITEs every
  // page of the receiver's --mr-size MR; the receiver checks that no page
  // goes back to an older pass (mr_passes.hpp)
  double mr_remote_write_s = 0;
  bool mr_huge = false;  // --mr-size memory 2 MiB aligned, MADV_HUGEPAGE

  // QP attributes: rxe treats retry_cnt/rnr_retry 7 as "retry forever".
  int timeout = 14;
  int retry_cnt = 7;
  int rnr_retry = 7;

  double stall_timeout_s = 60;  // no completion for this long = fail; 0 = never
  double progress_s = 0;        // > 0: a JSON progress line on stderr this often
  double stall_list_s = 0;      // > 0: list every stall longer than this in the summary
  bool busy_poll = false;
  bool worker_thread = false;  // verbs objects made and used by a second thread
  std::string ready_file;       // written once set-up is done and traffic starts

  // Debug: make the sender break the contract so tests can see the checker fail.
  std::optional<uint64_t> inject_dup;   // send this sequence number twice on QP 0
  std::optional<uint64_t> inject_skip;  // never send this sequence number on QP 0
};

// Parses argv; prints help and exits for --help; throws crx::Error on misuse.
Options parse_options(int argc, char** argv);

}  // namespace crx::verbs_seq
