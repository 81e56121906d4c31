// What a container holds in verbs objects, as `crx migrate` announces it in
// the manifest's "rdma" section and the receiver checks it (preflight.hpp):
// devices, the QPNs and MR indices that must be free on the destination
// (restore recreates objects with their numbers), object counts, pinned
// memory. Plain data: no verbs library needed to read or write it.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace crx::rdma {

struct ObjectCounts {
  uint32_t pd = 0, mr = 0, cq = 0, srq = 0, qp = 0, ah = 0;
  uint32_t async_event = 0, comp_channel = 0;
  uint32_t total() const { return pd + mr + cq + srq + qp + ah; }
  bool operator==(const ObjectCounts&) const = default;
};

struct RdmaInventory {
  std::vector<std::string> devices;  // ibdev names, e.g. "rxe0", sorted, unique
  std::vector<uint32_t> qpns;        // sorted
  std::vector<uint32_t> mrns;        // MR indices (lkey >> 8), sorted
  ObjectCounts counts;
  uint64_t mr_bytes = 0;             // memory registered (pinned) in MRs
  uint32_t contexts = 0;             // uverbs files (ibv_context) found
  // Objects no restore brings back yet, e.g. "UC QP 4101 (rxe0)": only RC
  // and UD QPs are (verbs-ext/lib). The sender's, not part of the manifest.
  std::vector<std::string> unsupported;

  bool empty() const { return contexts == 0; }
  // Adds one context's dump (rxe_migr_abi.h format) taken on `device`.
  // Throws RdmaError(VerbsCall, ..., EINVAL) on a malformed dump.
  void add_dump(const std::string& device, const void* dump, size_t length);
  void add(const RdmaInventory& other);
  bool operator==(const RdmaInventory&) const = default;
};

nlohmann::json to_json(const RdmaInventory& inv);
// Strict: a missing or mistyped field throws Error naming "manifest rdma.<field>".
RdmaInventory inventory_from_json(const nlohmann::json& j);

// "2 QPs, 3 MRs (1.0 MiB pinned), 2 CQs, 1 PD on rxe0"
std::string describe(const RdmaInventory& inv);

// Throws RdmaError(Unsupported, EOPNOTSUPP) naming the container and its
// objects that a restore cannot bring back, before anything is frozen.
void refuse_unsupported(const std::string& id, const RdmaInventory& inv);

}  // namespace crx::rdma
