#include "common/log.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <nlohmann/json.hpp>

namespace crx::log {
namespace {

int g_fd = 2;
bool g_file = false;
Format g_format = Format::Text;
bool g_debug = false;
bool g_journal = false;

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

int syslog_priority(Level l) {
  switch (l) {
    case Level::Debug: return 7;
    case Level::Info: return 6;
    case Level::Warn: return 4;
    case Level::Error: return 3;
  }
  return 6;
}

bool stderr_is_journal() {
  struct stat st{};
  if (::fstat(STDERR_FILENO, &st) != 0) return false;
  return journal_stream_matches(std::getenv("JOURNAL_STREAM"), st.st_dev, st.st_ino);
}

}  // namespace

bool journal_stream_matches(const char* env, unsigned long long dev, unsigned long long ino) {
  if (!env) return false;
  unsigned long long d = 0, i = 0;
  char tail = 0;
  if (std::sscanf(env, "%llu:%llu%c", &d, &i, &tail) != 2) return false;
  return d == dev && i == ino;
}

std::string format_text_line(Level level, std::string_view msg, bool journal) {
  if (journal)
    return "<" + std::to_string(syslog_priority(level)) + ">" + level_name(level) + ": " +
           std::string(msg) + "\n";
  return now_rfc3339() + " " + level_name(level) + ": " + std::string(msg) + "\n";
}

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
  g_journal = !g_file && format == Format::Text && stderr_is_journal();
}

bool has_log_file() { return g_file; }
bool to_journal() { return g_journal; }

void write(Level level, std::string_view msg) {
  if (level == Level::Debug && !g_debug) return;
  std::string line;
  if (g_format == Format::Json) {
    nlohmann::json j{{"level", level_name(level)}, {"msg", std::string(msg)}, {"time", now_rfc3339()}};
    line = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  } else {
    line = format_text_line(level, msg, g_journal);
  }
  (void)!::write(g_fd, line.data(), line.size());
}

}  // namespace crx::log
