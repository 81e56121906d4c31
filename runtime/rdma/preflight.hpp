// The receiver's check of a container's verbs objects (the manifest's rdma
// section) before it answers the manifest, so that a migration that cannot
// restore fails while the source still runs (never frozen):
//   - crx's patched rdma_rxe is loaded (its qpn_min parameter exists);
//   - an RDMA device has port 1 ACTIVE;
//   - none of the container's QPNs and MR indices is taken here (restore
//     recreates every object with its number).
// Throws RdmaError with the cause (rdma_error.hpp) and one line naming
// what is wrong.
#pragma once
#include "rdma/rdma_host.hpp"
#include "rdma/rdma_inventory.hpp"

namespace crx::rdma {

void check_destination(const RdmaInventory& inv, RdmaHost& host);

}  // namespace crx::rdma
