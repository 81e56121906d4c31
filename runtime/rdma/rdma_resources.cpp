#include "rdma/rdma_resources.hpp"

#include <nlohmann/json.hpp>

#include "rdma/rdma_error.hpp"

namespace crx::rdma {
namespace {

void walk(const nlohmann::json& j, const std::string& key, std::vector<RdmaResource>& out) {
  if (j.is_array()) {
    for (const auto& e : j) walk(e, key, out);
    return;
  }
  if (!j.is_object()) return;
  auto it = j.find(key);
  if (it != j.end() && it->is_number_unsigned()) {
    RdmaResource r;
    r.number = it->get<uint32_t>();
    if (auto d = j.find("ifname"); d != j.end() && d->is_string()) r.device = d->get<std::string>();
    out.push_back(std::move(r));
    return;
  }
  for (const auto& [k, v] : j.items()) walk(v, key, out);
}

}  // namespace

std::vector<RdmaResource> parse_rdma_resources(const std::string& text, const std::string& key) {
  std::vector<RdmaResource> out;
  // An empty table prints nothing at all with some iproute2 versions.
  if (text.find_first_not_of(" \t\r\n") == std::string::npos) return out;
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded())
    throw RdmaError(RdmaCause::ToolFailed, "rdma -j resource show printed something that is not JSON");
  walk(j, key, out);
  return out;
}

}  // namespace crx::rdma
