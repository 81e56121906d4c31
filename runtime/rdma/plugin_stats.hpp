// What the CRIU plugin (crx_ibverbs.so) and crx leave in a CRIU images dir
// about verbs objects, read for the migration report and to decide whether
// a restore really succeeded:
//   crx-verbs-dump.json     plugin, at dump: {"contexts":N,"objects":{"pd":..,
//                           "mr":..,"cq":..,"srq":..,"qp":..},"mr_bytes":..,
//                           "receives_in_progress":..,"responder_resources":..,
//                           "completions":..,
//                           "image_bytes":..,"dump_ms":..}
//   crx-verbs-restore.json  plugin, at restore: {"ok":true|false,"error":"..",
//                           "recreate_ms":..,"pin_ms":..,"resume_ms":..,"objects":{..},
//                           "init_ms":..,"providers_preloaded":true|false,
//                           "recreate_parts_ms":{"load":..,"open":..,"create":..,
//                           "refill":..,"map":..}}
//   crx-verbs-resume.json   crx, after resuming QPs the plugin left stopped
//                           (CRX_VERBS_DEFER_RESUME): {"qps":N,"resume_ms":..}
// ok:false means the restore failed even if CRIU says it succeeded: the
// plugin's late hook cannot fail a restore (it killed the tasks itself).
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>

namespace crx::rdma {

inline constexpr const char* kVerbsDumpFile = "crx-verbs-dump.json";
inline constexpr const char* kVerbsRestoreFile = "crx-verbs-restore.json";
inline constexpr const char* kVerbsResumeFile = "crx-verbs-resume.json";

struct VerbsDumpStats {
  uint64_t contexts = 0;
  std::map<std::string, uint64_t> objects;  // "pd", "mr", "cq", "srq", "qp", ...
  uint64_t mr_bytes = 0;
  uint64_t receives_in_progress = 0;  // QPs caught in the middle of a receive
  uint64_t responder_resources = 0;   // READs/atomics accepted, kept for retries
  uint64_t completions = 0;           // waiting in the CQs, carried to the restore
  uint64_t image_bytes = 0;           // the plugin's context images
  double dump_ms = 0;
};

struct VerbsRestoreStats {
  bool ok = false;
  std::string error;
  double recreate_ms = 0, pin_ms = 0, resume_ms = 0;
  std::map<std::string, uint64_t> objects;
  // The plugin's init in CRIU (libibverbs' device list), and whether the
  // providers it loads were loaded before the restore began (a migration:
  // checkpoint/criu_rpc.hpp, StartedRestore::Setup::preload_verbs_plugin).
  double init_ms = 0;
  bool providers_preloaded = false;
  // recreate_ms by step, over all contexts: loading the image (of it,
  // load_read: reading its file), opening the device, creating the
  // objects, refilling them, making their queues mappable again
  std::map<std::string, double> recreate_parts_ms;
};

struct VerbsResumeStats {
  uint64_t qps = 0;
  double resume_ms = 0;
};

// Parsing (nullopt for text that is not a JSON object; missing numbers are
// 0; a restore without "ok" is not ok).
std::optional<VerbsDumpStats> parse_verbs_dump_stats(const std::string& text);
std::optional<VerbsRestoreStats> parse_verbs_restore_stats(const std::string& text);
std::optional<VerbsResumeStats> parse_verbs_resume_stats(const std::string& text);

// From <dir>/<file>; nullopt if the file does not exist. A file that exists
// but does not parse: dump/resume nullopt, restore {ok:false, error}.
std::optional<VerbsDumpStats> read_verbs_dump_stats(const std::string& dir);
std::optional<VerbsRestoreStats> read_verbs_restore_stats(const std::string& dir);
std::optional<VerbsResumeStats> read_verbs_resume_stats(const std::string& dir);
void write_verbs_resume_stats(const std::string& dir, const VerbsResumeStats& s);

// Did the plugin dump verbs contexts into dir (it writes kVerbsDumpFile
// then, and only then)? A restore of dir needs the plugin exactly if so.
bool verbs_dumped(const std::string& dir);

// Throws RdmaError(PluginRestore) "restoring the verbs objects failed: <error>"
// if <dir>/crx-verbs-restore.json says ok:false (or cannot be read).
void check_verbs_restore(const std::string& dir);

}  // namespace crx::rdma
