// `crx ps`: the processes of a container (every pid in its cgroup), and
// runc's filtering of ps(1) output down to them.
#pragma once
#include <sys/types.h>

#include <string>
#include <vector>

#include "container/create.hpp"

namespace crx::container {

// Host pids of every process in the container's cgroup, sorted.
std::vector<pid_t> container_pids(const GlobalOptions& g, const std::string& id);

// Keeps the header line of ps(1) output and the lines whose PID column
// holds one of pids. Throws when the header has no PID column.
std::string filter_ps_output(const std::string& ps_output, const std::vector<pid_t>& pids);

}  // namespace crx::container
