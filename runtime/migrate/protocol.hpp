// The JSON bodies of the control frames, with strict parsing: a missing or
// mistyped field is a clear error naming the frame and the field.
//
// Conversation (after authentication, see auth.hpp):
//   S: Manifest            R: Accept (or Error)
//   [S: RootfsData* RootfsEnd]                      (--send-rootfs)
//   per round r = 1..n (pre-dumps, then the final dump):
//     S: RoundStart{r}     R: PageServerReady       (page channel: new TCP
//                                                    connection, own auth)
//     S: ImageData/ImageClose/ImageSymlink*  (as CRIU writes them)
//     S: RoundDone         R: RoundAck{page_bytes}
//   S: DumpDone            R: RestoreOk    (restored, held before resume;
//                                           the sender sends DumpDone right
//                                           after the final RoundDone, the
//                                           receiver answers both in turn)
//   S: Commit              R: CommitAck    (running on the destination)
//   Either side may send Error/Abort at any point: everything rolls back.
//
// Post-copy (--lazy; the manifest asks, Accept must say lazy:true or the
// sender stops before the freeze: an older receiver never says it): no
// pre-copy rounds; in the final round the page channel carries CRIU's lazy
// page requests and answers instead of the memory, the RoundAck comes once
// the destination's lazy-pages daemon is up, and after CommitAck:
//                          R: LazyDone{stats}  (every page arrived; only
//                                               now is the source destroyed)
//
// Filled after the resume (the manifest says the sender takes it, the
// CommitAck says the receiver does it; README.md, "Pages filled after the
// resume"): a pre-copy migration whose destination resumed the container
// before copying the pages it holds into it. After CommitAck:
//                          R: LazyDone{stats}  (every page in place; only
//                                               now is the source destroyed)
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "migrate/elf_files.hpp"
#include "rdma/rdma_inventory.hpp"

namespace crx::migrate {

inline constexpr int kProtocolVersion = 1;

struct CheckpointFlags {
  bool tcp_established = false;
  bool ext_unix_sk = false;
  bool shell_job = false;
  bool file_locks = false;
  std::string manage_cgroups_mode;  // empty = CRIU's default
};

struct Manifest {
  std::string id;
  std::string bundle;          // the bundle path on the source
  std::string config_sha256;   // of its config.json
  std::string config_json;     // the config itself (small)
  bool send_rootfs = false;    // sender will stream the rootfs if asked
  int pre_copy_rounds = 0;     // upper bound
  std::string criu_version;
  std::string kernel;          // uname -r of the source
  CheckpointFlags flags;
  // The container's verbs objects (devices, QPNs, MR indices, counts,
  // pinned memory); absent when it has none. The receiver checks them
  // before it accepts (rdma/preflight.hpp).
  std::optional<rdma::RdmaInventory> rdma;
  // What the sender will move (migrate/inventory.hpp), listed before the
  // freeze; absent from older senders.
  std::optional<nlohmann::json> inventory;
  // Post-copy (--lazy): resume on the destination before the memory
  // arrives; absent (false) from older senders.
  bool lazy = false;
  // The sender waits for a LazyDone after a CommitAck that says
  // filling_after_resume. Absent (false) from older senders: their
  // receiver restores every page before the resume.
  bool fill_after_resume = false;
  // The ELF files the container maps or holds open, with their build-ids,
  // read before the freeze (elf_files.hpp); absent from older senders.
  std::optional<std::vector<ElfFile>> elf_files;
};

struct Acceptance {
  std::string bundle;          // where the destination will restore from
  bool need_rootfs = false;    // sender must stream config.json + rootfs
  // The receiver takes the migration post-copy. An older receiver ignores
  // the manifest's "lazy" and never says this: the sender refuses then.
  bool lazy = false;
  // How long the receiver took to prepare the restore before this answer
  // (receiver.cpp); 0: not prepared yet (later, or an older receiver).
  double prepare_seconds = 0;
  // The receiver takes the final round opened before the freeze, followed
  // by a Frozen frame once the source is frozen (sender.cpp). An older
  // receiver never says this: the sender then freezes first, as before.
  bool final_round_ahead = false;
  // The receiver decodes a page channel in frames (zero_runs.hpp). An
  // older receiver never says this: the sender's channel stays unframed.
  bool zero_runs = false;
  // The receiver's page channels decode compressed frames too (zero_runs.hpp,
  // "Compressed"). An older receiver never says this: no frame is compressed.
  bool lz4_frames = false;
  // The receiver makes the UTS and IPC namespaces that the images leave
  // out, holding what crx carried (checkpoint/uts_ipc_anew.hpp). An older
  // receiver never says this: the sender's CRIU then dumps them.
  bool uts_ipc_anew = false;
  // The receiver reads a LateState frame after DumpDone and applies it
  // before the restored tasks run. An older receiver never says this: the
  // sender then reads everything in the frozen window, as before.
  bool late_state = false;
  // The receiver found every file of the manifest's elf_files here, the
  // same size and build-id (elf_files.hpp): the final dump may validate
  // sizes only. An older receiver never says this.
  bool elf_files_same = false;
  // The path in the cgroup2 hierarchy of the cgroup the restore goes into,
  // made already (a prepared restore on a pure cgroup2 host); "" when it
  // is not known yet. An older receiver never says it: the final dump
  // then keeps CRIU's walk of the cgroup (CriuSource).
  std::string cgroup_path;
};

struct RoundStart {
  int round = 0;
  bool final = false;
  std::string parent;          // "../<round-1>" or empty
  // The final round, opened before the freeze: a Frozen frame follows
  // before its images (Acceptance::final_round_ahead).
  bool ahead = false;
  // This round's page channel comes in frames (Acceptance::zero_runs).
  bool zero_runs = false;
};

struct RoundDone {
  uint64_t image_bytes = 0;
  double criu_seconds = 0;
};

struct RoundAck {
  uint64_t page_bytes = 0;     // memory the page server received
};

// LateState's payload: what the source read after it had sent the final
// images, while the destination restored (a frozen container cannot change
// it after the dump), for the destination to set before the tasks run.
struct LateState {
  // Network sysctls crx carries (checkpoint/fresh_netns.hpp): "net/..."
  // paths below /proc/sys, their values.
  std::map<std::string, std::string> net_sysctls;
};

struct RestoreDone {
  double restore_seconds = 0;
  int pid = 0;
};

// CommitAck's payload: what the destination's verbs plugin and crx wrote
// about restoring verbs objects (rdma/plugin_stats.hpp's restore and resume
// files, as they are), so that the sender's report has the whole verbs
// part. Empty for a container without verbs objects and from receivers
// that send none.
struct CommitAck {
  std::string verbs_restore;  // crx-verbs-restore.json, "" if none
  std::string verbs_resume;   // crx-verbs-resume.json, "" if none
  std::string criu_restore;   // CRIU's stats-restore as JSON (report.hpp), "" if none
  // The container runs, but its pages are still being copied in from the
  // destination's own images: LazyDone follows (Manifest::fill_after_resume).
  bool filling_after_resume = false;
};

// CRIU's lazy pages move in pages of the machine's size: 4 KiB on the
// x86-64 hosts crx runs on.
inline constexpr uint64_t kLazyPageSize = 4096;

// LazyDone's payload: the destination's lazy phase, from its resume to the
// last page (CRIU's lazy-pages daemon; migrate/lazy_stats.hpp).
struct LazyStats {
  double seconds = 0;             // resume -> every page in place
  uint64_t bytes = 0;             // page channel bytes from the source
  uint64_t pages = 0;             // pages copied into the restored tasks
  uint64_t on_demand_pages = 0;   // of those, pages a task faulted on first
  uint64_t faults = 0;            // page faults the daemon saw
  uint64_t pushed_pages() const { return pages > on_demand_pages ? pages - on_demand_pages : 0; }
};

std::string to_json(const Manifest& m);
std::string to_json(const Acceptance& a);
std::string to_json(const RoundStart& r);
std::string to_json(const RoundDone& r);
std::string to_json(const RoundAck& r);
std::string to_json(const RestoreDone& r);
std::string to_json(const CommitAck& a);
std::string to_json(const LazyStats& s);
std::string to_json(const LateState& s);

Manifest parse_manifest(const std::string& text);
Acceptance parse_acceptance(const std::string& text);
RoundStart parse_round_start(const std::string& text);
RoundDone parse_round_done(const std::string& text);
RoundAck parse_round_ack(const std::string& text);
RestoreDone parse_restore_done(const std::string& text);
// "" (an older receiver) is an empty CommitAck.
CommitAck parse_commit_ack(const std::string& text);
// Throws Error (Cause::Invalid) naming what is malformed: a path that is
// not a plain one below net/, a value that is not a string.
LateState parse_late_state(const std::string& text);
LazyStats parse_lazy_done(const std::string& text);

}  // namespace crx::migrate
