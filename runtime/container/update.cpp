#include "container/update.hpp"

#include <cctype>
#include <cerrno>
#include <cstdlib>

#include "common/error.hpp"
#include "container/lifecycle.hpp"
#include "cgroup/cgroup.hpp"
#include "spec/spec.hpp"
#include "state/store.hpp"

namespace crx::container {

int64_t parse_memory_size(const std::string& text) {
  if (text == "-1") return -1;
  size_t i = 0;
  while (i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.')) ++i;
  if (i == 0) throw Error("invalid size: \"" + text + "\"");
  errno = 0;
  double number = std::strtod(text.substr(0, i).c_str(), nullptr);
  std::string unit = text.substr(i);
  for (auto& c : unit) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (!unit.empty() && unit.back() == 'b') unit.pop_back();
  if (!unit.empty() && unit.back() == 'i') unit.pop_back();
  double mult = 1;
  if (unit.empty()) mult = 1;
  else if (unit == "k") mult = 1024.0;
  else if (unit == "m") mult = 1024.0 * 1024;
  else if (unit == "g") mult = 1024.0 * 1024 * 1024;
  else if (unit == "t") mult = 1024.0 * 1024 * 1024 * 1024;
  else if (unit == "p") mult = 1024.0 * 1024 * 1024 * 1024 * 1024;
  else throw Error("invalid size: \"" + text + "\"");
  double bytes = number * mult;
  if (errno != 0 || bytes > 9.2e18) throw Error("invalid size: \"" + text + "\"");
  return static_cast<int64_t>(bytes);
}

nlohmann::json resources_json_from_flags(const UpdateFlags& f) {
  nlohmann::json r = nlohmann::json::object();
  auto mem = [&](const char* key, const std::optional<std::string>& v) {
    if (v) r["memory"][key] = parse_memory_size(*v);
  };
  mem("limit", f.memory);
  mem("swap", f.memory_swap);
  mem("reservation", f.memory_reservation);
  mem("kernel", f.kernel_memory);
  mem("kernelTCP", f.kernel_memory_tcp);
  if (f.cpu_shares) r["cpu"]["shares"] = *f.cpu_shares;
  if (f.cpu_quota) r["cpu"]["quota"] = *f.cpu_quota;
  if (f.cpu_period) r["cpu"]["period"] = *f.cpu_period;
  if (f.cpu_rt_period) r["cpu"]["realtimePeriod"] = *f.cpu_rt_period;
  if (f.cpu_rt_runtime) r["cpu"]["realtimeRuntime"] = *f.cpu_rt_runtime;
  if (f.cpuset_cpus) r["cpu"]["cpus"] = *f.cpuset_cpus;
  if (f.cpuset_mems) r["cpu"]["mems"] = *f.cpuset_mems;
  if (f.pids_limit) r["pids"]["limit"] = *f.pids_limit;
  if (f.blkio_weight) r["blockIO"]["weight"] = *f.blkio_weight;
  return r;
}

void update_container(const GlobalOptions& g, const std::string& id, const nlohmann::json& resources) {
  if (!resources.is_object()) throw Error("update: resources must be a JSON object");
  spec::Resources res = spec::parse_resources(resources, "update resources");
  auto dir = state::StateDir::open(g.root, id);
  auto st = dir.load();
  if (current_status(dir, st) == state::Status::Stopped) throw Error("container " + id + ": container not running");
  if (st.cgroup.is_null()) throw Error("container " + id + " has no cgroup to update");
  cgroup::Cgroup::load(st.cgroup).apply(res);
  if (st.config.is_object()) {
    auto& saved = st.config["linux"]["resources"];
    if (!saved.is_object()) saved = nlohmann::json::object();
    nlohmann::json patch = resources;
    patch.erase("devices");  // device rules are not updated (as runc)
    saved.merge_patch(patch);
    dir.save(st);
  }
}

}  // namespace crx::container
