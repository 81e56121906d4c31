// The process `crx exec` starts: either an OCI Process object from
// --process file.json, or the container's own process (config.json) with
// the command-line overrides applied the way runc applies them.
#pragma once
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "spec/spec.hpp"

namespace crx::container {

struct ExecOverrides {
  std::vector<std::string> args;
  bool tty = false;
  std::string cwd;
  std::vector<std::string> env;         // appended to the container's env
  std::string user;                     // "uid" or "uid:gid" (numeric)
  std::vector<uint32_t> additional_gids;
  std::vector<std::string> caps;        // "CAP_NET_ADMIN", added to every set
  bool no_new_privs = false;
  std::string apparmor;
  std::string process_label;
};

// config = the container's config.json as saved in state.json. Returns the
// process JSON with the overrides applied (unit-testable, no parsing of caps).
nlohmann::json exec_process_json(const nlohmann::json& config, const ExecOverrides& o);
// exec_process_json, then spec::parse_process. Throws crx::Error.
spec::Process exec_process(const nlohmann::json& config, const ExecOverrides& o);
// Reads and parses an OCI Process object from a file.
spec::Process exec_process_from_file(const std::string& path);

}  // namespace crx::container
