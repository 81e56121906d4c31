// state.json (<root>/<id>/state.json): what StateDir::load() does with the
// file's text (parse, ContainerState::from_json), then what commands do
// with a loaded state: the OCI state object (`crx state`, hooks), the
// saved cgroup (Cgroup::load: kill, delete, pause, checkpoint) and the
// saved config (parse_spec: checkpoint, exec). crx writes the file itself,
// but it sits on disk between commands: a truncated or edited one must be
// refused with a crx::Error, never crash a command.
#include <cstddef>
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "common/error.hpp"
#include "cgroup/cgroup.hpp"
#include "spec/spec.hpp"
#include "state/store.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  // as StateDir::load()
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded()) return 0;
  crx::state::ContainerState st;
  try {
    st = crx::state::ContainerState::from_json(j);
  } catch (const crx::Error&) {
    return 0;
  }
  (void)crx::state::oci_state_json(st, crx::state::Status::Running).dump();
  (void)st.to_json().dump();
  if (!st.cgroup.is_null() && !st.cgroup.empty()) {
    try {
      (void)crx::cgroup::Cgroup::load(st.cgroup);
    } catch (const crx::Error&) {
    }
  }
  if (st.config.is_object()) {
    try {
      (void)crx::spec::parse_spec(st.config, "state.json config");
    } catch (const crx::Error&) {
    }
  }
  return 0;
}
