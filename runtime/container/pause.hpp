// `crx pause` / `crx resume`: the cgroup freezer (v1 freezer.state,
// v2 cgroup.freeze), with runc's state checks and messages.
#pragma once
#include <string>

#include "container/create.hpp"

namespace crx::container {

// Running or created -> paused; otherwise "container not running".
void pause_container(const GlobalOptions& g, const std::string& id);
// Paused -> running; otherwise "container not paused".
void resume_container(const GlobalOptions& g, const std::string& id);

}  // namespace crx::container
