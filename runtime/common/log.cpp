#include "common/log.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <ctime>
#include <nlohmann/json.hpp>

namespace crx::log {
namespace {

int g_fd = 2;
bool g_file = false;
Format g_format = Format::Text;
bool g_debug = false;

const char* level_name(Level l) {
  switch (l) {
    case Level::Debug: return "debug";
    case Level::Info: return "info";
    case Level::Warn: return "warning";
    case Level::Error: return "error";
  }
  return "info";
}

std::string now_rfc3339() {
  auto now = std::chrono::system_clock::now();
  std::time_t t = std::chrono::system_clock::to_time_t(now);
  auto ns = std::chrono::duration_cast<std::chrono::nanoseconds>(now.time_since_epoch()).count() % 1000000000;
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[64];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  char out[96];
  std::snprintf(out, sizeof out, "%s.%09lldZ", buf, static_cast<long long>(ns));
  return out;
}

}  // namespace

void configure(const std::string& path, Format format, bool debug) {
  g_format = format;
  g_debug = debug;
  if (!path.empty()) {
    int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (fd >= 0) {
      g_fd = fd;
      g_file = true;
    }
  }
}

bool has_log_file() { return g_file; }

void write(Level level, std::string_view msg) {
  if (level == Level::Debug && !g_debug) return;
  std::string line;
  if (g_format == Format::Json) {
    nlohmann::json j{{"level", level_name(level)}, {"msg", std::string(msg)}, {"time", now_rfc3339()}};
    line = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  } else {
    line = now_rfc3339() + " " + level_name(level) + ": " + std::string(msg) + "\n";
  }
  (void)!::write(g_fd, line.data(), line.size());
}

}  // namespace crx::log
