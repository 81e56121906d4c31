#include "plugin_log.hpp"

// CRIU's log levels (criu/include/log.h, not installed by Debian)
extern "C" void print_on_level(unsigned int loglevel, const char* format, ...);

namespace crx::verbs_plugin {
namespace {
constexpr unsigned kLogError = 1;
constexpr unsigned kLogInfo = 3;
constexpr unsigned kLogDebug = 4;
}  // namespace

void log_error(const std::string& msg) { print_on_level(kLogError, "Error (crx_ibverbs): %s\n", msg.c_str()); }
void log_info(const std::string& msg) { print_on_level(kLogInfo, "crx_ibverbs: %s\n", msg.c_str()); }
void log_debug(const std::string& msg) { print_on_level(kLogDebug, "crx_ibverbs: %s\n", msg.c_str()); }

}  // namespace crx::verbs_plugin
