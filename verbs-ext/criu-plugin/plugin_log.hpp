// Logging into CRIU's log (print_on_level, exported by the criu binary).
#pragma once
#include <string>

namespace crx::verbs_plugin {

void log_error(const std::string& msg);
void log_info(const std::string& msg);
void log_debug(const std::string& msg);

}  // namespace crx::verbs_plugin
