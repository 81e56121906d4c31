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

// systemd's journal reads a service's stderr and sets JOURNAL_STREAM to
// "<device>:<inode>" of that stream. When the text log goes to stderr and
// stderr is that stream, lines follow the journal's conventions: no
// timestamp (the journal has its own) and a "<N>" syslog priority prefix
// (<3> error, <4> warning, <6> info, <7> debug), so `journalctl -p err`
// finds crx's errors. True when env (JOURNAL_STREAM's value, may be null)
// names dev:ino.
bool journal_stream_matches(const char* env, unsigned long long dev, unsigned long long ino);
// True when configure() chose the journal style for stderr.
bool to_journal();
// One text log line for msg at level, journal style or not (with newline).
std::string format_text_line(Level level, std::string_view msg, bool journal);

}  // namespace crx::log
