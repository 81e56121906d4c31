#include "rdma/preflight.hpp"

#include <algorithm>
#include <set>

#include "rdma/rdma_error.hpp"
#include "rdma/rdma_resources.hpp"

namespace crx::rdma {
namespace {

void check_free(const std::vector<uint32_t>& wanted, const std::vector<RdmaResource>& used,
                const char* what, const char* range, RdmaCause cause) {
  std::set<uint32_t> want(wanted.begin(), wanted.end());
  std::string clash;
  int n = 0;
  for (const auto& r : used) {
    if (!want.count(r.number)) continue;
    if (++n <= 4) {
      clash += (clash.empty() ? "" : ", ") + std::to_string(r.number) +
               (r.device.empty() ? "" : " (" + r.device + ")");
    }
  }
  if (n == 0) return;
  if (n > 4) clash += " and " + std::to_string(n - 4) + " more";
  throw RdmaError(cause, std::string("rdma: ") + what + " " + clash +
                             " of the container in use on the destination; the nodes' " + range +
                             " ranges overlap (rdma section of /etc/crx/config.yaml, crx rdma setup)");
}

}  // namespace

void check_destination(const RdmaInventory& inv, RdmaHost& host) {
  if (inv.empty()) return;
  if (!host.module_param("qpn_min")) {
    throw RdmaError(RdmaCause::NoPatchedModule,
                    host.module_loaded()
                        ? "rdma: the destination's rdma_rxe is not crx's patched module "
                          "(no qpn_min parameter); install rxe-patches and run crx rdma setup"
                        : "rdma: the destination has no rdma_rxe loaded; run crx rdma setup there");
  }
  std::vector<std::string> devs = host.devices();
  std::string states;
  bool active = false;
  for (const auto& d : devs) {
    std::string s = host.port_state(d);
    if (s.find("ACTIVE") != std::string::npos && s.find("INACTIVE") == std::string::npos) {
      active = true;
      break;
    }
    states += (states.empty() ? "" : ", ") + d + ": " + (s.empty() ? "no port 1" : s);
  }
  if (!active) {
    throw RdmaError(RdmaCause::NoActiveDevice,
                    devs.empty() ? "rdma: the destination has no RDMA device; run crx rdma setup there"
                                 : "rdma: no RDMA device on the destination has an ACTIVE port (" +
                                       states + ")");
  }
  if (!inv.qpns.empty())
    check_free(inv.qpns, parse_rdma_resources(host.resources_json("qp"), "lqpn"), "QPN", "qpn",
               RdmaCause::QpnInUse);
  // rxe's MR index is lkey >> 8 ("mrn" is the RDMA core's resource id)
  if (!inv.mrns.empty())
    check_free(inv.mrns, parse_rdma_mr_indices(host.resources_json("mr")), "MR index", "mrn",
               RdmaCause::MrnInUse);
}

}  // namespace crx::rdma
