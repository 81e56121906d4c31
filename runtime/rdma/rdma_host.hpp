// What crx reads and changes on a node's RDMA stack: the rdma_rxe module
// and its parameters, RDMA devices and their port state, the numbers in
// use (iproute2's `rdma -j resource show qp|mr`). An interface so the
// receiver's preflight and `crx rdma setup` are unit-tested with a fake
// (the CI host has no RDMA); system_rdma_host.hpp is the real one.
#pragma once
#include <optional>
#include <string>
#include <vector>

namespace crx::rdma {

class RdmaHost {
 public:
  virtual ~RdmaHost() = default;
  // /sys/module/rdma_rxe exists.
  virtual bool module_loaded() = 0;
  // /sys/module/rdma_rxe/parameters/<name> (trimmed), nullopt if absent.
  virtual std::optional<std::string> module_param(const std::string& name) = 0;
  // /sys/module/rdma_rxe/refcnt: open contexts hold the driver module.
  virtual int module_refcount() = 0;
  // Names in /sys/class/infiniband, sorted.
  virtual std::vector<std::string> devices() = 0;
  // /sys/class/infiniband/<dev>/ports/1/state, e.g. "4: ACTIVE"; "" if absent.
  virtual std::string port_state(const std::string& device) = 0;
  // Output of `rdma -j resource show <kind>` (kind: "qp" or "mr").
  virtual std::string resources_json(const std::string& kind) = 0;

  // modprobe rdma_rxe <params...> (each "name=value").
  virtual void load_module(const std::vector<std::string>& params) = 0;
  // modprobe -r rdma_rxe.
  virtual void unload_module() = 0;
  // rdma link add <device> type rxe netdev <netdev>.
  virtual void add_rxe_link(const std::string& device, const std::string& netdev) = 0;
};

}  // namespace crx::rdma
