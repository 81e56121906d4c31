// The node's RDMA settings from /etc/crx/config.yaml, section "rdma":
//
//   rdma:
//     device: rxe0        # the SoftRoCE device crx rdma setup makes
//     netdev: eth0        # its Ethernet device (required by setup)
//     qpn_min: 0x1000     # this node's QPN range (rdma_rxe module
//     qpn_max: 0x1fff     #   parameters); disjoint on every node, so
//     mrn_min: 0x1000     #   restored numbers never collide
//     mrn_max: 0x1fff
//     ahn_min: 0x1000     # address handles (UD): indices 1..0x7fff
//     ahn_max: 0x1fff
//
// Every key is optional (0 = the module's default bound); a min above its
// max, a value outside 0..0xffffff (AH: 0..0x7fff) or an unknown key is an
// error naming the file and the key.
#pragma once
#include <cstdint>
#include <string>

namespace crx::rdma {

struct RdmaConfig {
  std::string device = "rxe0";
  std::string netdev;
  uint32_t qpn_min = 0, qpn_max = 0;
  uint32_t mrn_min = 0, mrn_max = 0;
  uint32_t ahn_min = 0, ahn_max = 0;
  bool operator==(const RdmaConfig&) const = default;
};

RdmaConfig parse_rdma_config(const std::string& yaml_text, const std::string& origin);
// A missing file gives the defaults unless required.
RdmaConfig load_rdma_config(const std::string& path, bool required = false);

}  // namespace crx::rdma
