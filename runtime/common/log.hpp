// The --log / --log-format / --debug sink shared by every command.
// JSON lines are {"level":"error","msg":"...","time":"RFC3339"} as runc writes
// them; containerd's shim reports the last level=="error" message.
#pragma once
#include <string>
#include <string_view>

namespace crx::log {

enum class Format { Text, Json };
enum class Level { Debug, Info, Warn, Error };

// path empty = stderr. Safe to call once at start-up.
void configure(const std::string& path, Format format, bool debug);
void write(Level level, std::string_view msg);
inline void debug(std::string_view m) { write(Level::Debug, m); }
inline void info(std::string_view m) { write(Level::Info, m); }
inline void warn(std::string_view m) { write(Level::Warn, m); }
inline void error(std::string_view m) { write(Level::Error, m); }
// True when a --log file is configured (errors then go there AND stderr).
bool has_log_file();

}  // namespace crx::log
