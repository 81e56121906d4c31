#include "checkpoint/carried_state.hpp"

#include "common/error.hpp"
#include "common/fs.hpp"

namespace crx::checkpoint {
namespace {

[[noreturn]] void malformed(const std::string& field) {
  throw Error(std::string(kCarriedStateFile) + ": \"" + field + "\" is missing or malformed");
}

}  // namespace

nlohmann::json CarriedState::to_json() const {
  nlohmann::json j{{"resources", resources}, {"annotations", annotations}, {"owner", owner},
                   {"pid_file", pid_file},   {"paused", paused}};
  if (!net_sysctls.empty()) j["net_sysctls"] = net_sysctls;
  if (new_netns_outside_images) j["new_netns_outside_images"] = true;
  if (uts_ipc_outside_images) {
    const UtsIpcContent& u = *uts_ipc_outside_images;
    j["uts_ipc_outside_images"] = {
        {"hostname", u.hostname}, {"domainname", u.domainname}, {"ipc_sysctls", u.ipc_sysctls}};
  }
  return j;
}

CarriedState CarriedState::from_json(const nlohmann::json& j) {
  if (!j.is_object()) throw Error(std::string(kCarriedStateFile) + ": not a JSON object");
  CarriedState c;
  try {
    c.resources = j.value("resources", nlohmann::json());
    if (!c.resources.is_null() && !c.resources.is_object()) malformed("resources");
    if (j.contains("annotations"))
      c.annotations = j.at("annotations").get<std::map<std::string, std::string>>();
    c.owner = j.value("owner", "");
    c.pid_file = j.value("pid_file", "");
    c.paused = j.value("paused", false);
    if (j.contains("net_sysctls"))
      c.net_sysctls = j.at("net_sysctls").get<std::map<std::string, std::string>>();
    for (const auto& [path, value] : c.net_sysctls)
      if (!path.starts_with("net/") || path.find("..") != std::string::npos) malformed("net_sysctls");
    if (j.contains("new_netns_outside_images") && !j.at("new_netns_outside_images").is_boolean())
      malformed("new_netns_outside_images");
    c.new_netns_outside_images = j.value("new_netns_outside_images", false);
    if (j.contains("uts_ipc_outside_images")) {
      const auto& u = j.at("uts_ipc_outside_images");
      if (!u.is_object() || !u.value("hostname", nlohmann::json()).is_string() ||
          !u.value("domainname", nlohmann::json()).is_string())
        malformed("uts_ipc_outside_images");
      UtsIpcContent content;
      content.hostname = u.at("hostname").get<std::string>();
      content.domainname = u.at("domainname").get<std::string>();
      if (u.contains("ipc_sysctls"))
        content.ipc_sysctls = u.at("ipc_sysctls").get<IpcSysctls>();
      c.uts_ipc_outside_images = std::move(content);
    }
  } catch (const nlohmann::json::exception& e) {
    throw Error(std::string(kCarriedStateFile) + ": " + e.what());
  }
  return c;
}

CarriedState carried_state_of(const state::ContainerState& st, bool paused) {
  CarriedState c;
  if (st.config.is_object() && st.config.contains("linux") && st.config["linux"].is_object() &&
      st.config["linux"].contains("resources"))
    c.resources = st.config["linux"]["resources"];
  c.annotations = st.annotations;
  c.owner = st.owner;
  c.pid_file = st.pid_file;
  c.paused = paused;
  return c;
}

void write_carried_state(const std::string& images_dir, const CarriedState& c) {
  // Not via a temporary name: a migration streams each file of the images
  // dir as it is closed, under the name it has then.
  write_file(images_dir + "/" + kCarriedStateFile, c.to_json().dump(), 0600);
}

std::optional<CarriedState> read_carried_state(const std::string& images_dir) {
  std::string path = images_dir + "/" + kCarriedStateFile;
  if (!path_exists(path)) return std::nullopt;
  auto j = nlohmann::json::parse(read_file(path), nullptr, false);
  if (j.is_discarded()) throw Error(path + ": not JSON");
  return CarriedState::from_json(j);
}

nlohmann::json config_with_resources(nlohmann::json config, const CarriedState& c) {
  if (c.resources.is_object() && config.is_object()) {
    if (!config["linux"].is_object()) config["linux"] = nlohmann::json::object();
    config["linux"]["resources"] = c.resources;
  }
  return config;
}

bool carries_other_resources(const nlohmann::json& config, const CarriedState& c) {
  if (!c.resources.is_object()) return false;
  if (!config.is_object()) return true;
  auto l = config.find("linux");
  if (l == config.end() || !l->is_object()) return true;
  auto resources = l->find("resources");
  return resources == l->end() || *resources != c.resources;
}

}  // namespace crx::checkpoint
