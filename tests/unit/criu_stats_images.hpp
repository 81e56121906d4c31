// CRIU's statistics images (stats-dump, stats-restore) as CRIU writes
// them: its service magic, the stats magic, a u32 length, the protobuf
// message (runtime/checkpoint/criu_stats.proto). For the unit tests of
// their reader and of the report that shows them.
#pragma once
#include <cstdint>
#include <string>

#include "criu-rpc/criu_stats.pb-c.h"

namespace crx::test {

inline std::string criu_u32(uint32_t v) { return std::string(reinterpret_cast<const char*>(&v), sizeof v); }

inline std::string criu_stats_image(const CrxCriuStats& m, uint32_t service_magic = 0x55105940) {
  std::string body(crx_criu_stats__get_packed_size(&m), '\0');
  crx_criu_stats__pack(&m, reinterpret_cast<uint8_t*>(body.data()));
  return criu_u32(service_magic) + criu_u32(0x57093306) + criu_u32(static_cast<uint32_t>(body.size())) + body;
}

// A stats-restore: times in microseconds.
inline std::string criu_restore_stats_image(uint32_t forking_us, uint32_t restore_us, uint64_t pages) {
  CrxCriuRestoreStats r = CRX_CRIU_RESTORE_STATS__INIT;
  r.has_forking_time = r.has_restore_time = r.has_pages_restored = true;
  r.forking_time = forking_us;
  r.restore_time = restore_us;
  r.pages_restored = pages;
  CrxCriuStats m = CRX_CRIU_STATS__INIT;
  m.restore = &r;
  return criu_stats_image(m);
}

}  // namespace crx::test
