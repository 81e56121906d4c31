// `crx events`: runc's event stream for one container: {"type":"stats",
// "id":..,"data":{cpu,memory,pids,blkio,hugetlb}} every interval and
// {"type":"oom","id":..} for each OOM kill, one JSON object per line;
// ends when the container stops. With stats_once: one stats line.
#pragma once
#include <chrono>
#include <cstdio>
#include <string>

#include "container/create.hpp"

namespace crx::container {

// Go duration syntax as runc takes it: "5s", "100ms", "1m30s", "2h".
std::chrono::milliseconds parse_duration(const std::string& text);

// Writes events to out (flushed after each line). Returns when the
// container has stopped. "container not running" if it is stopped already.
void container_events(const GlobalOptions& g, const std::string& id, std::chrono::milliseconds interval,
                      bool stats_once, std::FILE* out);

}  // namespace crx::container
