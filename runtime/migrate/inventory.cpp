#include "migrate/inventory.hpp"

#include <cstdio>

#include "checkpoint/image_dirs.hpp"
#include "common/error.hpp"
#include "cgroup/cgroup.hpp"

namespace crx::migrate {
namespace {

std::string mib(uint64_t b) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f MiB", static_cast<double>(b) / (1 << 20));
  return buf;
}

}  // namespace

nlohmann::json Inventory::to_json() const {
  nlohmann::json j{{"processes", nlohmann::json::array()},
                   {"bind_mounts", nlohmann::json::array()},
                   {"namespaces", nlohmann::json::array()},
                   {"memory_bytes", memory_bytes},
                   {"paused", paused}};
  for (const auto& p : processes) j["processes"].push_back({{"pid", p.pid}, {"command", p.command}});
  for (const auto& [d, s] : bind_mounts) j["bind_mounts"].push_back({{"destination", d}, {"source", s}});
  for (const auto& [t, p] : namespaces) j["namespaces"].push_back({{"type", t}, {"path", p}});
  return j;
}

Inventory Inventory::from_json(const nlohmann::json& j) {
  if (!j.is_object()) throw Error("malformed manifest frame: \"inventory\" is not an object");
  Inventory inv;
  // get<integer>() of a float casts it, undefined out of the type's range
  auto integer = [](const nlohmann::json& v, const char* key) -> const nlohmann::json& {
    if (!v.is_number_integer())
      throw Error(std::string("malformed manifest frame: \"inventory\": ") + key + " is not an integer");
    return v;
  };
  try {
    for (const auto& p : j.value("processes", nlohmann::json::array()))
      inv.processes.push_back(
          {integer(p.at("pid"), "pid").get<pid_t>(), p.at("command").get<std::string>()});
    for (const auto& m : j.value("bind_mounts", nlohmann::json::array()))
      inv.bind_mounts.emplace_back(m.at("destination").get<std::string>(),
                                   m.at("source").get<std::string>());
    for (const auto& n : j.value("namespaces", nlohmann::json::array()))
      inv.namespaces.emplace_back(n.at("type").get<std::string>(), n.at("path").get<std::string>());
    if (j.contains("memory_bytes"))
      inv.memory_bytes = integer(j["memory_bytes"], "memory_bytes").get<uint64_t>();
    inv.paused = j.value("paused", false);
  } catch (const nlohmann::json::exception& e) {
    throw Error(std::string("malformed manifest frame: \"inventory\": ") + e.what());
  }
  return inv;
}

std::string Inventory::summary() const {
  std::string s = std::to_string(processes.size()) +
                  (processes.size() == 1 ? " process (" : " processes (") +
                  checkpoint::describe(processes) + ")";
  if (!bind_mounts.empty()) {
    s += ", bind mounts";
    for (const auto& [d, src] : bind_mounts) s += " " + d + "<-" + src;
  }
  for (const auto& [t, p] : namespaces) s += ", " + t + " namespace " + p;
  s += ", memory " + mib(memory_bytes);
  if (paused) s += ", paused";
  return s;
}

Inventory take_inventory(const checkpoint::SourceContainer& s) {
  Inventory inv;
  inv.processes = checkpoint::container_processes_in_tree(s.state);
  for (const auto& m : s.spec.mounts)
    if (checkpoint::is_bind_mount(m)) inv.bind_mounts.emplace_back(m.destination, m.source);
  for (const auto& n : s.spec.linux.namespaces)
    if (!n.path.empty()) inv.namespaces.emplace_back(n.type, n.path);
  if (!s.state.cgroup.is_null() && !s.state.cgroup.empty()) {
    try {
      auto st = cgroup::Cgroup::load(s.state.cgroup).stats();
      inv.memory_bytes = st["memory"]["usage"].value("usage", uint64_t{0});
    } catch (const std::exception&) {
    }
  }
  inv.paused = s.paused;
  return inv;
}

}  // namespace crx::migrate
