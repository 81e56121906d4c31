// start, kill, delete, state and list of existing containers.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "container/create.hpp"
#include "state/store.hpp"

namespace crx::container {

// Status as seen now: process liveness, exec.fifo, cgroup freezer.
state::Status current_status(const state::StateDir& dir, const state::ContainerState& st);

// Releases the init waiting on exec.fifo, then runs poststart hooks.
void start_container(const GlobalOptions& g, const std::string& id);
// "9", "KILL", "SIGKILL" -> 9. Throws for anything else.
int parse_signal(const std::string& text);
void kill_container(const GlobalOptions& g, const std::string& id, int signal, bool all);
// Refuses a running container unless force (then SIGKILL first).
void delete_container(const GlobalOptions& g, const std::string& id, bool force);
nlohmann::json container_state(const GlobalOptions& g, const std::string& id);
std::vector<nlohmann::json> list_containers(const GlobalOptions& g);

}  // namespace crx::container
