// Reading iproute2's `rdma -j resource show qp|mr`: a JSON array with one
// object per resource, its device in "ifname", a QP's number in "lqpn" and
// an MR's keys in "lkey"/"rkey" (hex strings), see rdma-resource(8). An
// MR's "mrn" is the RDMA core's own resource id, not the driver's MR index
// (rxe's index is lkey >> 8). Older iproute2 wrapped the array in objects;
// any nesting is walked.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace crx::rdma {

struct RdmaResource {
  std::string device;  // "ifname"
  uint32_t number = 0;
};

// The number in `key` (e.g. "lqpn"). Throws RdmaError(ToolFailed) when
// text is not JSON.
std::vector<RdmaResource> parse_rdma_resources(const std::string& json_text, const std::string& key);
// rxe's MR indices (lkey >> 8) of `rdma -j resource show mr`; an MR whose
// lkey is not shown (no CAP_NET_ADMIN) is skipped.
std::vector<RdmaResource> parse_rdma_mr_indices(const std::string& json_text);

}  // namespace crx::rdma
