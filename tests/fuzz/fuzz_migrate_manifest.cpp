// The JSON bodies of the control frames without the framing: Manifest
// (with its rdma inventory and the inventory of what moves) and the small
// ones (Accept, RoundStart, RoundDone, RoundAck, RestoreOk, CommitAck).
// A parsed manifest is encoded again and must parse again (what the
// receiver keeps is what a sender could have sent).
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>

#include "common/error.hpp"
#include "migrate/protocol.hpp"

namespace m = crx::migrate;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  std::optional<m::Manifest> man;
  try {
    man = m::parse_manifest(text);
  } catch (const crx::Error&) {
  }
  if (man) {
    try {
      m::Manifest again = m::parse_manifest(m::to_json(*man));
      if (again.id != man->id || again.config_json != man->config_json) __builtin_trap();
    } catch (const crx::Error& e) {
      std::fprintf(stderr, "a parsed manifest does not parse again: %s\n", e.what());
      __builtin_trap();
    }
  }
  auto quiet = [&](auto parse) {
    try {
      (void)parse(text);
    } catch (const crx::Error&) {
    }
  };
  quiet(m::parse_acceptance);
  quiet(m::parse_round_start);
  quiet(m::parse_round_done);
  quiet(m::parse_round_ack);
  quiet(m::parse_restore_done);
  quiet(m::parse_commit_ack);
  quiet(m::parse_late_state);
  return 0;
}
