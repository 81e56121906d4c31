#include "checkpoint/criu_stats.hpp"

#include <cstring>
#include <memory>

#include "common/error.hpp"
#include "common/fs.hpp"
#include "criu-rpc/criu_stats.pb-c.h"

namespace crx::checkpoint {

namespace {

// CRIU's magics (criu/include/magic.h): service images such as the stats
// start with the service magic, then their own.
constexpr uint32_t kServiceMagic = 0x55105940;
constexpr uint32_t kStatsMagic = 0x57093306;

[[noreturn]] void bad(const std::string& why) {
  throw Error("CRIU's statistics image: " + why, Cause::Invalid);
}

uint32_t u32_at(std::string_view s, size_t off) {
  uint32_t v = 0;
  std::memcpy(&v, s.data() + off, sizeof v);  // CRIU writes host order; crx runs where it dumps
  return v;
}

struct StatsDeleter {
  void operator()(CrxCriuStats* m) const { crx_criu_stats__free_unpacked(m, nullptr); }
};

using Stats = std::unique_ptr<CrxCriuStats, StatsDeleter>;

Stats unpack(std::string_view image) {
  if (image.size() < 12) bad(std::to_string(image.size()) + " bytes, shorter than its header");
  if (u32_at(image, 0) != kServiceMagic || u32_at(image, 4) != kStatsMagic) bad("wrong magic");
  uint32_t len = u32_at(image, 8);
  if (len != image.size() - 12)
    bad("its entry says " + std::to_string(len) + " bytes, the file holds " + std::to_string(image.size() - 12));
  auto* m = crx_criu_stats__unpack(nullptr, len, reinterpret_cast<const uint8_t*>(image.data() + 12));
  if (!m) bad("the entry is not a stats message");
  return Stats(m);
}

// The dump or restore part of the message; an image without it is refused.
template <class Part>
const Part& part(const Stats& m, Part* CrxCriuStats::*member, const char* what) {
  if (!(m.get()->*member)) bad(std::string("no ") + what + " statistics in it");
  return *(m.get()->*member);
}

double seconds(uint32_t usec) { return usec / 1e6; }

template <class T, class F>
std::optional<T> read_quietly(const std::string& path, F parse) {
  try {
    auto text = read_file_if_present(path);
    if (!text) return std::nullopt;
    return parse(*text);
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

}  // namespace

CriuDumpStats parse_criu_dump_stats(std::string_view image) {
  auto m = unpack(image);
  const CrxCriuDumpStats& d = part(m, &CrxCriuStats::dump, "dump");
  return {.freezing_seconds = seconds(d.freezing_time),
          .frozen_seconds = seconds(d.frozen_time),
          .memdump_seconds = seconds(d.memdump_time),
          .memwrite_seconds = seconds(d.memwrite_time),
          .pages_scanned = d.pages_scanned,
          .pages_skipped_parent = d.pages_skipped_parent,
          .pages_written = d.pages_written};
}

CriuRestoreStats parse_criu_restore_stats(std::string_view image) {
  auto m = unpack(image);
  const CrxCriuRestoreStats& r = part(m, &CrxCriuStats::restore, "restore");
  return {.forking_seconds = seconds(r.forking_time),
          .restore_seconds = seconds(r.restore_time),
          .pages_restored = r.pages_restored};
}

std::optional<CriuDumpStats> read_criu_dump_stats(const std::string& work_dir) {
  return read_quietly<CriuDumpStats>(work_dir + "/" + kCriuDumpStatsFile,
                                     [](const std::string& t) { return parse_criu_dump_stats(t); });
}

std::optional<CriuRestoreStats> read_criu_restore_stats(const std::string& work_dir) {
  return read_quietly<CriuRestoreStats>(work_dir + "/" + kCriuRestoreStatsFile,
                                        [](const std::string& t) { return parse_criu_restore_stats(t); });
}

}  // namespace crx::checkpoint
