// What a migration did, for people (text) and tools (--format json):
// phases with their durations, bytes per round, bytes in total, downtime.
#pragma once
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "checkpoint/criu_stats.hpp"
#include "migrate/protocol.hpp"
#include "rdma/plugin_stats.hpp"

namespace crx::migrate {

struct PhaseTime {
  std::string name;  // "connect", "pre-copy 1", "freeze", "checkpoint", "transfer", "restore", ...
  double seconds = 0;
  // CPU (user + system) the phase cost: crx's own process, all its threads
  // (kernel TLS encrypts in the sending thread, so its cipher is here), and
  // the children crx reaped during the phase (CRIU). On a host short of
  // cores this is what a move takes from the container's own work.
  double cpu_seconds = 0;
  double child_cpu_seconds = 0;
};

struct RoundReport {
  int round = 0;
  bool final = false;
  uint64_t page_bytes = 0;
  uint64_t image_bytes = 0;
  double seconds = 0;
  // The sender's measurements (precopy.hpp), bytes/s; 0 when unknown.
  double throughput = 0;  // page_bytes / seconds
  double bandwidth = 0;   // pre-copy: the link estimate after this round
  // pre-copy: dirtied since the previous round's snapshot; final round:
  // its memory over the time from the last snapshot to the freeze.
  double dirty_rate = 0;
  // pre-copy: the final round and downtime predicted had pre-copy
  // stopped after this round.
  std::optional<uint64_t> predicted_final_bytes;
  std::optional<double> predicted_downtime;
  // Pages CRIU dumped that the destination held unchanged, so not sent
  // (page_dedup.hpp); bytes = pages * 4096.
  uint64_t unchanged_pages = 0;
  // Pages of zeros sent as their count (zero_runs.hpp).
  uint64_t zero_pages = 0;
  // Bytes of the channel's frames that crossed LZ4-compressed, and what
  // they took on the wire (zero_runs.hpp, "Compressed").
  uint64_t compressed_bytes = 0, compressed_to = 0;
  // The page filter's thread's CPU in the round (PageDedupStats); the rest
  // of crx's is in the phases' cpu_seconds.
  double filter_cpu_seconds = 0;
  // Final dump with ParentPages::Check (sides.hpp): pages CRIU took from
  // the parent that crx read and compared, and of them, the changed ones
  // it sent (the NIC's writes CRIU cannot see).
  uint64_t parent_pages_checked = 0;
  uint64_t parent_pages_changed = 0;
  // Of those, only the ones the MRs' write logs name were checked: the
  // pages the logs held (RoundStats::device_written_pages).
  std::optional<uint64_t> device_written_pages;
  // Final dump: the container's network namespace, as a new one (nobody
  // configured it), moved without CRIU's network tools (sides.hpp).
  bool netns_moved_empty = false;
  size_t net_sysctls_carried = 0;  // network sysctls crx carried (RoundStats)
  bool netns_read_ahead = false;    // the namespace read before the freeze (RoundStats)
  bool net_sysctls_late = false;    // its sysctls read after the images (RoundStats)
  bool uts_ipc_made_anew = false;   // UTS and IPC namespaces left out (RoundStats)
  bool cgroup_left_to_destination = false;  // RoundStats
  bool build_ids_checked_ahead = false;  // CRIU validated sizes only (RoundStats)
  bool dump_request_ahead = false;  // CRIU set up before the freeze (RoundStats)
  bool pre_dump_read = false;       // pages read while the container ran (RoundStats)
  // CRIU's own account of the round (its stats-dump): how long it kept the
  // container frozen, and of that the memory dump and write.
  std::optional<checkpoint::CriuDumpStats> criu;
};

// The verbs objects' part, from the files the CRIU plugin and crx leave in
// the images dir (rdma/plugin_stats.hpp): the sender has the dump's, the
// receiver the dump's (it came with the images), the restore's and crx's
// deferred resume.
struct VerbsReport {
  std::optional<rdma::VerbsDumpStats> dump;
  std::optional<rdma::VerbsRestoreStats> restore;
  std::optional<rdma::VerbsResumeStats> resume;
  // From the images dir; nullopt when none of the files is there.
  static std::optional<VerbsReport> read(const std::string& images_dir);
  // Objects per type: the restore's count if there is one, else the dump's.
  std::map<std::string, uint64_t> objects() const;
  // Time in the resume handshakes: the plugin's, or crx's when deferred.
  double resume_ms() const;
};

struct MigrationReport {
  std::string role;       // "sender" | "receiver"
  std::string id;
  std::string peer;
  std::string outcome;    // "migrated" | "rolled back" | "in doubt" | "lazy phase failed" | "fill failed"
  std::string error;      // why, when not migrated
  std::vector<PhaseTime> phases;
  std::vector<RoundReport> rounds;
  std::string pre_copy_stop;
  std::string pre_copy_mode;            // "auto", "fixed"; "" without pre-copy
  double fixed_downtime_estimate = 0;   // the planner's fixed part of the downtime
  uint64_t rootfs_bytes = 0;
  uint64_t wire_bytes = 0;  // control connection, both directions
  // "tls+ktls" (TLS 1.3 with the shared key; the page channel went to
  // kernel TLS), "tls" (no page channel yet), "tls-cert+ktls" / "tls-cert"
  // (the same with certificates), "plaintext" (--insecure-plaintext); ""
  // if no connection was made.
  std::string security;
  // The page channel's TLS 1.3 suite ("TLS_CHACHA20_POLY1305_SHA256"); ""
  // in clear text or before the page channel.
  std::string tls_cipher;
  double downtime_seconds = 0;
  double total_seconds = 0;
  std::optional<VerbsReport> verbs;
  // CRIU's own account of the restore (its stats-restore on the
  // destination; the sender has it from the CommitAck).
  std::optional<checkpoint::CriuRestoreStats> criu_restore;
  // Post-copy (--lazy): the lazy phase, from the resume on the destination
  // to the last page (the destination's numbers, sent in LazyDone).
  std::optional<LazyStats> lazy;
  // Filled after the resume (a pre-copy migration): the destination's
  // daemon copying the pages it received into the running container, from
  // the resume to the last page (bytes: the pages; LazyDone).
  std::optional<LazyStats> fill;
  // The destination's prepared restore (its "prepare" phase): done before
  // the freeze, out of the downtime; 0 when it was not prepared ahead (then
  // the receiver's "restore" phase holds it). The sender has it from the
  // Accept.
  double prepare_seconds = 0;
  bool paused = false;  // the container moved paused (and stays so)
  // Processes outside the init's tree that stayed behind and were killed
  // with the source (--kill-exec): "pid (command)" each.
  std::vector<std::string> left_out;
  // What moves (migrate/inventory.hpp, the manifest's); null if unknown.
  nlohmann::json inventory;

  // Memory moved: the rounds' and, post-copy, the lazy phase's pages.
  uint64_t page_bytes() const;
  // The last pre-copy round's prediction and the final round after it.
  const RoundReport* last_pre_copy_round() const;
  const RoundReport* final_round() const;
  uint64_t image_bytes() const;
  std::string to_text() const;
  std::string to_json() const;
};

// CriuRestoreStats as the CommitAck and the JSON report carry it.
nlohmann::json criu_restore_json(const checkpoint::CriuRestoreStats& s);
// Throws Error naming the field that is missing or not a number.
checkpoint::CriuRestoreStats criu_restore_from_json(const nlohmann::json& j);

// Measures phases; reports each start to an optional progress callback.
class PhaseClock {
 public:
  using Clock = std::chrono::steady_clock;
  explicit PhaseClock(MigrationReport& r, std::function<void(const std::string&)> progress = {})
      : report_(r), progress_(std::move(progress)), start_(Clock::now()) {}
  // Ends the running phase (if any) and starts `name`.
  void begin(const std::string& name);
  void end();
  double since_start() const;

 private:
  MigrationReport& report_;
  std::function<void(const std::string&)> progress_;
  Clock::time_point start_;
  Clock::time_point phase_start_;
  double phase_cpu_start_ = 0;
  double phase_child_cpu_start_ = 0;
  std::string current_;
};

// A progress printer: on a terminal one line rewritten in place, else one
// line per phase. Writes to stderr.
std::function<void(const std::string&)> terminal_progress(const std::string& prefix);

}  // namespace crx::migrate
