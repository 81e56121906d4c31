// An RdmaHost in memory for the preflight and `crx rdma setup` tests: the
// module, its parameters, devices and the numbers `rdma -j` would print.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "rdma/rdma_host.hpp"

namespace crx::test {

struct FakeRdmaHost : rdma::RdmaHost {
  bool loaded = false;
  bool patched = true;  // what modprobe loads has crx's parameters
  std::map<std::string, std::string> params;
  int refcount = 0;
  std::map<std::string, std::string> ports;  // device -> port 1 state
  std::map<std::string, std::string> json;   // "qp"/"mr" -> rdma -j output
  std::vector<std::string> actions;

  void load_patched(std::map<std::string, std::string> p) {
    loaded = true;
    params = std::move(p);
  }
  bool module_loaded() override { return loaded; }
  std::optional<std::string> module_param(const std::string& n) override {
    auto it = params.find(n);
    if (!loaded || it == params.end()) return std::nullopt;
    return it->second;
  }
  int module_refcount() override { return refcount; }
  std::vector<std::string> devices() override {
    std::vector<std::string> out;
    for (const auto& [d, s] : ports) out.push_back(d);
    return out;
  }
  std::string port_state(const std::string& d) override {
    auto it = ports.find(d);
    return it == ports.end() ? "" : it->second;
  }
  std::string resources_json(const std::string& kind) override {
    actions.push_back("rdma -j resource show " + kind);
    return json[kind];
  }
  void load_module(const std::vector<std::string>& p) override {
    std::string a = "modprobe rdma_rxe";
    for (const auto& s : p) a += " " + s;
    actions.push_back(a);
    loaded = true;
    params.clear();
    if (!patched) return;
    for (const auto& s : p) {
      auto eq = s.find('=');
      params[s.substr(0, eq)] = s.substr(eq + 1);
    }
  }
  void unload_module() override {
    actions.push_back("modprobe -r rdma_rxe");
    loaded = false;
    params.clear();
    ports.clear();
  }
  void add_rxe_link(const std::string& dev, const std::string& netdev) override {
    actions.push_back("rdma link add " + dev + " type rxe netdev " + netdev);
    ports[dev] = "4: ACTIVE";
  }
};

}  // namespace crx::test
