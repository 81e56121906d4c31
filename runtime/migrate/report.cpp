#include "migrate/report.hpp"

#include <unistd.h>

#include <cstdio>
#include <nlohmann/json.hpp>

#include "migrate/precopy.hpp"

namespace crx::migrate {

uint64_t MigrationReport::page_bytes() const {
  uint64_t n = 0;
  for (const auto& r : rounds) n += r.page_bytes;
  return n;
}

uint64_t MigrationReport::image_bytes() const {
  uint64_t n = 0;
  for (const auto& r : rounds) n += r.image_bytes;
  return n;
}

std::string MigrationReport::to_text() const {
  std::string out;
  char buf[256];
  std::snprintf(buf, sizeof buf, "%s %s %s: %s\n", role.c_str(), id.c_str(),
                role == "sender" ? ("-> " + peer).c_str() : ("<- " + peer).c_str(),
                outcome.c_str());
  out += buf;
  if (!error.empty()) out += "  reason: " + error + "\n";
  for (const auto& p : phases) {
    std::snprintf(buf, sizeof buf, "  %-14s %8.3f s\n", p.name.c_str(), p.seconds);
    out += buf;
  }
  for (const auto& r : rounds) {
    std::snprintf(buf, sizeof buf, "  round %d%s: memory %s, images %s, %.3f s\n", r.round,
                  r.final ? " (final dump)" : " (pre-copy)", human_bytes(r.page_bytes).c_str(),
                  human_bytes(r.image_bytes).c_str(), r.seconds);
    out += buf;
  }
  if (!pre_copy_stop.empty()) out += "  pre-copy stopped: " + pre_copy_stop + "\n";
  std::snprintf(buf, sizeof buf,
                "  moved: memory %s, images %s, rootfs %s, control link %s\n"
                "  downtime %.3f s, total %.3f s\n",
                human_bytes(page_bytes()).c_str(), human_bytes(image_bytes()).c_str(),
                human_bytes(rootfs_bytes).c_str(), human_bytes(wire_bytes).c_str(),
                downtime_seconds, total_seconds);
  out += buf;
  return out;
}

std::string MigrationReport::to_json() const {
  nlohmann::json j;
  j["role"] = role;
  j["id"] = id;
  j["peer"] = peer;
  j["outcome"] = outcome;
  if (!error.empty()) j["error"] = error;
  j["phases"] = nlohmann::json::array();
  for (const auto& p : phases) j["phases"].push_back({{"name", p.name}, {"seconds", p.seconds}});
  j["rounds"] = nlohmann::json::array();
  for (const auto& r : rounds) {
    j["rounds"].push_back({{"round", r.round},
                           {"final", r.final},
                           {"page_bytes", r.page_bytes},
                           {"image_bytes", r.image_bytes},
                           {"seconds", r.seconds}});
  }
  if (!pre_copy_stop.empty()) j["pre_copy_stop"] = pre_copy_stop;
  j["bytes"] = {{"pages", page_bytes()},
                {"images", image_bytes()},
                {"rootfs", rootfs_bytes},
                {"control_link", wire_bytes}};
  j["downtime_seconds"] = downtime_seconds;
  j["total_seconds"] = total_seconds;
  return j.dump();
}

void PhaseClock::begin(const std::string& name) {
  end();
  current_ = name;
  phase_start_ = Clock::now();
  if (progress_) progress_(name);
}

void PhaseClock::end() {
  if (current_.empty()) return;
  double s = std::chrono::duration<double>(Clock::now() - phase_start_).count();
  report_.phases.push_back(PhaseTime{current_, s});
  current_.clear();
}

double PhaseClock::since_start() const {
  return std::chrono::duration<double>(Clock::now() - start_).count();
}

std::function<void(const std::string&)> terminal_progress(const std::string& prefix) {
  bool tty = ::isatty(STDERR_FILENO);
  auto start = std::chrono::steady_clock::now();
  return [tty, prefix, start](const std::string& phase) {
    double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (tty) {
      std::fprintf(stderr, "\r\033[K%s [%6.2f s] %s", prefix.c_str(), t, phase.c_str());
      if (phase == "done") std::fprintf(stderr, "\n");
    } else {
      std::fprintf(stderr, "%s [%6.2f s] %s\n", prefix.c_str(), t, phase.c_str());
    }
    std::fflush(stderr);
  };
}

}  // namespace crx::migrate
