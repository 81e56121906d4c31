#include "rdma/rdma_resources.hpp"

#include <cstdlib>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>

#include "rdma/rdma_error.hpp"

namespace crx::rdma {
namespace {

using Extract = std::function<std::optional<uint32_t>(const nlohmann::json&)>;

void walk(const nlohmann::json& j, const std::string& key, const Extract& number,
          std::vector<RdmaResource>& out) {
  if (j.is_array()) {
    for (const auto& e : j) walk(e, key, number, out);
    return;
  }
  if (!j.is_object()) return;
  auto it = j.find(key);
  if (it != j.end()) {
    if (auto n = number(*it)) {
      RdmaResource r;
      r.number = *n;
      if (auto d = j.find("ifname"); d != j.end() && d->is_string()) r.device = d->get<std::string>();
      out.push_back(std::move(r));
    }
    return;
  }
  for (const auto& [k, v] : j.items()) walk(v, key, number, out);
}

std::vector<RdmaResource> parse(const std::string& text, const std::string& key, const Extract& number) {
  std::vector<RdmaResource> out;
  // An empty table prints nothing at all with some iproute2 versions.
  if (text.find_first_not_of(" \t\r\n") == std::string::npos) return out;
  nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded())
    throw RdmaError(RdmaCause::ToolFailed, "rdma -j resource show printed something that is not JSON");
  walk(j, key, number, out);
  return out;
}

std::optional<uint32_t> plain_number(const nlohmann::json& v) {
  if (!v.is_number_unsigned()) return std::nullopt;
  return v.get<uint32_t>();
}

// "0x1003a5" (iproute2 prints keys in hex) or a number: the key >> 8.
std::optional<uint32_t> index_of_key(const nlohmann::json& v) {
  uint64_t key;
  if (v.is_number_unsigned()) {
    key = v.get<uint64_t>();
  } else if (v.is_string()) {
    const std::string& s = v.get_ref<const std::string&>();
    if (s.size() < 3 || s.size() > 10 || s[0] != '0' || (s[1] != 'x' && s[1] != 'X')) return std::nullopt;
    char* end = nullptr;
    key = std::strtoull(s.c_str() + 2, &end, 16);
    if (*end != '\0') return std::nullopt;
  } else {
    return std::nullopt;
  }
  if (key > 0xffffffffu) return std::nullopt;
  return static_cast<uint32_t>(key >> 8);
}

}  // namespace

std::vector<RdmaResource> parse_rdma_resources(const std::string& text, const std::string& key) {
  return parse(text, key, plain_number);
}

std::vector<RdmaResource> parse_rdma_mr_indices(const std::string& text) {
  return parse(text, "lkey", index_of_key);
}

}  // namespace crx::rdma
