// How the runtime reacts to hook failures, per the OCI lifecycle:
// prestart/createRuntime/createContainer/startContainer failures abort the
// operation; poststart/poststop failures are warnings.
#pragma once
#include <string>
#include <vector>

#include "common/log.hpp"
#include "linux/hooks.hpp"

namespace crx::container {

inline void run_hooks_or_throw(const std::vector<spec::Hook>& hooks, const std::string& phase,
                               const std::string& state_json) {
  linux_::run_hooks(hooks, state_json, phase);
}

inline void run_hooks_warn(const std::vector<spec::Hook>& hooks, const std::string& phase,
                           const std::string& state_json) {
  try {
    linux_::run_hooks(hooks, state_json, phase);
  } catch (const std::exception& e) {
    log::warn(e.what());
  }
}

}  // namespace crx::container
