// CRIU's own account of a dump or restore: the statistics image it writes
// into its work dir when it finishes (stats-dump after a dump or pre-dump,
// stats-restore after a restore). The migration report shows it beside
// crx's phases, so that a frozen window can be split into CRIU's freezing,
// its memory dump and write, and the rest of its work (runtime/migrate/
// README.md, "CRIU's own times").
//
// The image: CRIU's service magic and the stats magic (two u32), then one
// entry: a u32 length and a protobuf message (criu_stats.proto).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace crx::checkpoint {

struct CriuDumpStats {
  double freezing_seconds = 0;  // seizing and freezing the tasks
  double frozen_seconds = 0;    // from frozen until CRIU let them go (or left them frozen)
  // Collecting the pages (parasite, into pipes); in a dump this includes
  // writing them, in a pre-dump the write follows the unfreeze.
  double memdump_seconds = 0;
  double memwrite_seconds = 0;  // writing them out (images or page server)
  uint64_t pages_scanned = 0;
  uint64_t pages_skipped_parent = 0;  // unchanged since the parent round (soft-dirty)
  uint64_t pages_written = 0;
};

struct CriuRestoreStats {
  double forking_seconds = 0;  // creating the task tree
  double restore_seconds = 0;  // the whole restore, forking included
  uint64_t pages_restored = 0;
};

inline constexpr const char* kCriuDumpStatsFile = "stats-dump";
inline constexpr const char* kCriuRestoreStatsFile = "stats-restore";

// Parse a stats image. Throws Error (Cause::Invalid) naming what is wrong
// when it is not one, or holds no dump (restore) part.
CriuDumpStats parse_criu_dump_stats(std::string_view image);
CriuRestoreStats parse_criu_restore_stats(std::string_view image);

// <work_dir>/stats-dump (stats-restore); nullopt when it is missing or does
// not parse: a report must not fail what it reports on.
std::optional<CriuDumpStats> read_criu_dump_stats(const std::string& work_dir);
std::optional<CriuRestoreStats> read_criu_restore_stats(const std::string& work_dir);

}  // namespace crx::checkpoint
