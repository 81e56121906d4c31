// The real RdmaHost: sysfs, modprobe and iproute2's rdma tool.
#pragma once
#include "rdma/rdma_host.hpp"

namespace crx::rdma {

class SystemRdmaHost : public RdmaHost {
 public:
  explicit SystemRdmaHost(std::string sysfs_root = "/sys") : sys_(std::move(sysfs_root)) {}
  bool module_loaded() override;
  std::optional<std::string> module_param(const std::string& name) override;
  int module_refcount() override;
  std::vector<std::string> devices() override;
  std::string port_state(const std::string& device) override;
  std::string resources_json(const std::string& kind) override;
  void load_module(const std::vector<std::string>& params) override;
  void unload_module() override;
  void add_rxe_link(const std::string& device, const std::string& netdev) override;

 private:
  std::string sys_;
};

}  // namespace crx::rdma
