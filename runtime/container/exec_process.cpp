#include "container/exec_process.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdlib>

#include "common/error.hpp"
#include "common/fs.hpp"

namespace crx::container {

namespace {

uint32_t parse_id(const std::string& text, const std::string& what) {
  if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos)
    throw Error("exec: --user " + what + " \"" + text + "\": only numeric ids are supported");
  errno = 0;
  unsigned long v = std::strtoul(text.c_str(), nullptr, 10);
  if (errno != 0 || v > 0xffffffffUL) throw Error("exec: --user " + what + " \"" + text + "\" out of range");
  return static_cast<uint32_t>(v);
}

}  // namespace

nlohmann::json exec_process_json(const nlohmann::json& config, const ExecOverrides& o) {
  nlohmann::json p = nlohmann::json::object();
  if (config.is_object() && config.contains("process") && config["process"].is_object()) p = config["process"];
  p["args"] = o.args;
  p["terminal"] = o.tty;
  if (!o.tty) p.erase("consoleSize");
  if (!o.cwd.empty()) p["cwd"] = o.cwd;
  if (!p.contains("cwd")) p["cwd"] = "/";
  if (!o.env.empty()) {
    if (!p.contains("env") || !p["env"].is_array()) p["env"] = nlohmann::json::array();
    for (const auto& e : o.env) p["env"].push_back(e);
  }
  if (!p.contains("user") || !p["user"].is_object()) p["user"] = {{"uid", 0}, {"gid", 0}};
  if (!o.user.empty()) {
    auto colon = o.user.find(':');
    p["user"]["uid"] = parse_id(o.user.substr(0, colon), "uid");
    p["user"]["gid"] = colon == std::string::npos ? 0u : parse_id(o.user.substr(colon + 1), "gid");
  }
  if (!o.additional_gids.empty()) p["user"]["additionalGids"] = o.additional_gids;
  if (!o.caps.empty()) {
    if (!p.contains("capabilities") || !p["capabilities"].is_object()) p["capabilities"] = nlohmann::json::object();
    for (const char* set : {"bounding", "effective", "permitted", "ambient"}) {
      auto& list = p["capabilities"][set];
      if (!list.is_array()) list = nlohmann::json::array();
      for (const auto& c : o.caps) {
        std::string name = c.rfind("CAP_", 0) == 0 ? c : "CAP_" + c;
        if (std::find(list.begin(), list.end(), name) == list.end()) list.push_back(name);
      }
    }
  }
  if (o.no_new_privs) p["noNewPrivileges"] = true;
  if (!o.apparmor.empty()) p["apparmorProfile"] = o.apparmor;
  if (!o.process_label.empty()) p["selinuxLabel"] = o.process_label;
  return p;
}

spec::Process exec_process(const nlohmann::json& config, const ExecOverrides& o) {
  if (o.args.empty()) throw Error("exec: args must not be empty (or use --process)");
  return spec::parse_process(exec_process_json(config, o), "exec arguments");
}

spec::Process exec_process_from_file(const std::string& path) {
  nlohmann::json doc;
  try {
    doc = nlohmann::json::parse(read_file(path));
  } catch (const nlohmann::json::exception& e) {
    throw Error("exec: --process " + path + ": " + e.what());
  }
  return spec::parse_process(doc, path);
}

}  // namespace crx::container
