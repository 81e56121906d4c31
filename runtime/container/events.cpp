#include "container/events.hpp"

#include <poll.h>

#include <cctype>
#include <cerrno>
#include <algorithm>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <optional>

#include "common/error.hpp"
#include "container/lifecycle.hpp"
#include "cgroup/cgroup.hpp"
#include "state/store.hpp"

namespace crx::container {

std::chrono::milliseconds parse_duration(const std::string& text) {
  if (text.empty()) throw Error("invalid duration \"\"");
  double total_ms = 0;
  size_t i = 0;
  while (i < text.size()) {
    size_t start = i;
    while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.')) ++i;
    if (i == start) throw Error("invalid duration \"" + text + "\"");
    double n = std::strtod(text.substr(start, i - start).c_str(), nullptr);
    size_t u = i;
    while (i < text.size() && std::isalpha(static_cast<unsigned char>(text[i]))) ++i;
    std::string unit = text.substr(u, i - u);
    if (unit == "ms") total_ms += n;
    else if (unit == "s") total_ms += n * 1000;
    else if (unit == "m") total_ms += n * 60000;
    else if (unit == "h") total_ms += n * 3600000;
    else if (unit == "us" || unit == "µs") total_ms += n / 1000;
    else if (unit == "ns") total_ms += n / 1e6;
    else throw Error("invalid duration \"" + text + "\": missing or unknown unit");
  }
  if (total_ms <= 0) throw Error("duration must be greater than 0: \"" + text + "\"");
  return std::chrono::milliseconds(static_cast<int64_t>(total_ms < 1 ? 1 : total_ms));
}

namespace {

struct Loaded {
  state::ContainerState st;
  bool running = false;
};

Loaded load(const GlobalOptions& g, const std::string& id) {
  auto dir = state::StateDir::open(g.root, id);
  Loaded l;
  l.st = dir.load();
  l.running = current_status(dir, l.st) != state::Status::Stopped;
  return l;
}

void emit(std::FILE* out, const nlohmann::json& event) {
  std::fprintf(out, "%s\n", event.dump().c_str());
  std::fflush(out);
}

}  // namespace

void container_events(const GlobalOptions& g, const std::string& id, std::chrono::milliseconds interval,
                      bool stats_once, std::FILE* out) {
  auto l = load(g, id);
  if (!l.running) throw Error("container " + id + ": container not running");
  if (l.st.cgroup.is_null()) throw Error("container " + id + " has no cgroup");
  auto cg = cgroup::Cgroup::load(l.st.cgroup);
  if (stats_once) {
    emit(out, {{"type", "stats"}, {"id", id}, {"data", cg.stats()}});
    return;
  }
  std::optional<cgroup::OomEvents> oom;
  try {
    oom.emplace(cg.oom_events());
    oom->consume();  // start counting from now
  } catch (const Error&) {
    // no memory controller: stats only
  }
  auto stats_event = [&] {
    try {
      emit(out, {{"type", "stats"}, {"id", id}, {"data", cg.stats()}});
    } catch (const Error&) {
      // the cgroup went away with the container
    }
  };
  auto oom_check = [&] {
    if (!oom) return;
    for (uint64_t n = oom->consume(); n > 0; --n) emit(out, {{"type", "oom"}, {"id", id}});
  };
  stats_event();
  auto next = std::chrono::steady_clock::now() + interval;
  for (;;) {
    auto now = std::chrono::steady_clock::now();
    int wait_ms = static_cast<int>(std::chrono::duration_cast<std::chrono::milliseconds>(next - now).count());
    if (wait_ms < 0) wait_ms = 0;
    // wake at least every 200 ms to notice that the container stopped
    pollfd p{oom ? oom->fd() : -1, POLLIN, 0};
    int r = ::poll(&p, 1, std::min(wait_ms, 200));
    if (r < 0 && errno != EINTR) throw_errno("events: poll");
    if (r > 0) oom_check();
    if (std::chrono::steady_clock::now() >= next) {
      oom_check();
      stats_event();
      next += interval;
    }
    bool running = false;
    try {
      running = load(g, id).running;
    } catch (const Error&) {
      // deleted meanwhile
    }
    if (!running) {
      oom_check();
      return;
    }
  }
}

}  // namespace crx::container
