#include "rdma/rdma_config.hpp"

#include <cstdio>

#include <yaml-cpp/yaml.h>

#include "common/fs.hpp"
#include "rdma/rdma_error.hpp"

namespace crx::rdma {
namespace {

constexpr uint32_t kMaxIndex = 0xffffff;  // 24-bit QPNs; MR indices are lkey >> 8
constexpr uint32_t kMaxAhIndex = 0x7fff;  // rxe's AH pool (RXE_MAX_AH)

[[noreturn]] void bad(const std::string& origin, const std::string& what) {
  throw RdmaError(RdmaCause::BadConfig, origin + ": " + what);
}

uint32_t index_value(const YAML::Node& n, const std::string& origin, const std::string& key,
                     uint32_t max = kMaxIndex) {
  long long v = 0;
  try {
    v = n.as<long long>();  // yaml-cpp reads 0x1000 as hex
  } catch (const YAML::Exception&) {
    bad(origin, "rdma." + key + " must be an integer");
  }
  if (v < 0 || v > max) {
    char range[32];
    std::snprintf(range, sizeof range, "0..0x%x", max);
    bad(origin, "rdma." + key + " must be " + range);
  }
  return static_cast<uint32_t>(v);
}

std::string name_value(const YAML::Node& n, const std::string& origin, const std::string& key) {
  if (!n.IsScalar()) bad(origin, "rdma." + key + " must be a name");
  std::string s = n.as<std::string>();
  if (s.empty() || s.size() > 63 || s.find_first_of("/ \t") != std::string::npos)
    bad(origin, "rdma." + key + " \"" + s + "\" is not a device name");
  return s;
}

void check_range(const std::string& origin, const char* what, uint32_t min, uint32_t max) {
  if (min && max && min > max)
    bad(origin, std::string("rdma.") + what + "_min is above rdma." + what + "_max");
}

}  // namespace

RdmaConfig parse_rdma_config(const std::string& text, const std::string& origin) {
  RdmaConfig c;
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    bad(origin, std::string("invalid YAML: ") + e.what());
  }
  if (!root || root.IsNull()) return c;
  if (!root.IsMap()) bad(origin, "top level must be a mapping");
  YAML::Node r = root["rdma"];
  if (!r || r.IsNull()) return c;
  if (!r.IsMap()) bad(origin, "rdma must be a mapping");
  for (const auto& kv : r) {
    std::string k = kv.first.as<std::string>();
    if (k == "device") {
      c.device = name_value(kv.second, origin, k);
    } else if (k == "netdev") {
      c.netdev = name_value(kv.second, origin, k);
    } else if (k == "qpn_min") {
      c.qpn_min = index_value(kv.second, origin, k);
    } else if (k == "qpn_max") {
      c.qpn_max = index_value(kv.second, origin, k);
    } else if (k == "mrn_min") {
      c.mrn_min = index_value(kv.second, origin, k);
    } else if (k == "mrn_max") {
      c.mrn_max = index_value(kv.second, origin, k);
    } else if (k == "ahn_min") {
      c.ahn_min = index_value(kv.second, origin, k, kMaxAhIndex);
    } else if (k == "ahn_max") {
      c.ahn_max = index_value(kv.second, origin, k, kMaxAhIndex);
    } else {
      bad(origin, "unknown key rdma." + k);
    }
  }
  check_range(origin, "qpn", c.qpn_min, c.qpn_max);
  check_range(origin, "mrn", c.mrn_min, c.mrn_max);
  check_range(origin, "ahn", c.ahn_min, c.ahn_max);
  return c;
}

RdmaConfig load_rdma_config(const std::string& path, bool required) {
  if (!path_exists(path)) {
    if (required) throw RdmaError(RdmaCause::BadConfig, "config file " + path + " does not exist", ENOENT);
    return {};
  }
  return parse_rdma_config(read_file(path), path);
}

}  // namespace crx::rdma
