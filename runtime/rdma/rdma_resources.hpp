// Reading iproute2's `rdma -j resource show qp|mr`: a JSON array with one
// object per resource, its device in "ifname" and its number in "lqpn"
// (QPs) or "mrn" (MRs), see rdma-resource(8). Older iproute2 wrapped the
// array in objects; any nesting is walked.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace crx::rdma {

struct RdmaResource {
  std::string device;  // "ifname"
  uint32_t number = 0;
};

// key: "lqpn" or "mrn". Throws RdmaError(ToolFailed) when text is not JSON.
std::vector<RdmaResource> parse_rdma_resources(const std::string& json_text, const std::string& key);

}  // namespace crx::rdma
