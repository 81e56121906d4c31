#include "rdma/rxe_setup.hpp"

#include <algorithm>
#include <cstdlib>
#include <utility>
#include <vector>

#include "rdma/rdma_error.hpp"

namespace crx::rdma {
namespace {

constexpr const char* kParams[] = {"qpn_min", "qpn_max", "mrn_min", "mrn_max", "ahn_min", "ahn_max"};

std::vector<std::pair<std::string, uint32_t>> wanted(const RdmaConfig& c) {
  return {{"qpn_min", c.qpn_min}, {"qpn_max", c.qpn_max}, {"mrn_min", c.mrn_min},
          {"mrn_max", c.mrn_max}, {"ahn_min", c.ahn_min}, {"ahn_max", c.ahn_max}};
}

bool has_crx_params(RdmaHost& host) {
  for (const char* p : kParams)
    if (!host.module_param(p)) return false;
  return true;
}

// Parameters as the module shows them (decimal) versus the config.
std::string differing(const RdmaConfig& c, RdmaHost& host) {
  std::string out;
  for (const auto& [name, value] : wanted(c)) {
    std::string have = host.module_param(name).value_or("?");
    if (std::strtoul(have.c_str(), nullptr, 0) != value || have == "?")
      out += (out.empty() ? "" : ", ") + name + " " + have + " (want " + std::to_string(value) + ")";
  }
  return out;
}

std::vector<std::string> modprobe_params(const RdmaConfig& c) {
  std::vector<std::string> out;
  for (const auto& [name, value] : wanted(c)) out.push_back(name + "=" + std::to_string(value));
  return out;
}

std::string joined(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : " ") + s;
  return out;
}

}  // namespace

std::string setup_rxe(const RdmaConfig& cfg, RdmaHost& host) {
  std::string log;
  if (host.module_loaded()) {
    if (!has_crx_params(host)) {
      throw RdmaError(RdmaCause::NoPatchedModule,
                      "rdma_rxe is loaded but has no qpn/mrn/ahn range parameters: "
                      "it is not crx's patched module; unload it (modprobe -r rdma_rxe) and install "
                      "rxe-patches' rdma_rxe.ko");
    }
    std::string diff = differing(cfg, host);
    if (!diff.empty()) {
      int users = host.module_refcount();
      if (users > 0) {
        throw RdmaError(RdmaCause::ModuleInUse,
                        "rdma_rxe is loaded with other ranges (" + diff + ") and is in use (" +
                            std::to_string(users) + " users): stop the RDMA applications first");
      }
      host.unload_module();
      log += "unloaded rdma_rxe (" + diff + ")\n";
    }
  }
  if (!host.module_loaded()) {
    auto params = modprobe_params(cfg);
    host.load_module(params);
    if (!has_crx_params(host)) {
      try {
        host.unload_module();
      } catch (const Error&) {
      }
      throw RdmaError(RdmaCause::NoPatchedModule,
                      "modprobe loaded an rdma_rxe without qpn/mrn/ahn range parameters: "
                      "install rxe-patches' rdma_rxe.ko (rxe-patches/build.sh) first");
    }
    log += "loaded rdma_rxe " + joined(params) + "\n";
  }
  auto devs = host.devices();
  if (std::find(devs.begin(), devs.end(), cfg.device) == devs.end()) {
    if (cfg.netdev.empty()) {
      throw RdmaError(RdmaCause::BadConfig, "rdma device " + cfg.device +
                                                " does not exist and rdma.netdev is not set in the config");
    }
    host.add_rxe_link(cfg.device, cfg.netdev);
    log += "added " + cfg.device + " on " + cfg.netdev + "\n";
  }
  std::string state = host.port_state(cfg.device);
  log += cfg.device + ": port 1 " + (state.empty() ? "missing" : state) + "\n";
  return log;
}

std::string rxe_status(RdmaHost& host) {
  std::string out;
  if (!host.module_loaded()) {
    out += "rdma_rxe: not loaded\n";
  } else if (!has_crx_params(host)) {
    out += "rdma_rxe: loaded, not crx's patched module (no QPN/MR ranges)\n";
  } else {
    out += "rdma_rxe: loaded (crx patched), users " + std::to_string(host.module_refcount()) + "\n";
    for (const char* p : kParams) out += std::string("  ") + p + " " + host.module_param(p).value_or("?") + "\n";
  }
  auto devs = host.devices();
  if (devs.empty()) out += "devices: none\n";
  for (const auto& d : devs) {
    std::string s = host.port_state(d);
    out += "device " + d + ": port 1 " + (s.empty() ? "missing" : s) + "\n";
  }
  return out;
}

}  // namespace crx::rdma
