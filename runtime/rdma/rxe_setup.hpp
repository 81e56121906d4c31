// `crx rdma setup` and `crx rdma status`: crx's patched rdma_rxe loaded
// with the node's QPN/MR-index ranges (rdma_config.hpp) and its SoftRoCE
// device made, idempotently.
//
// setup: not loaded -> modprobe rdma_rxe qpn_min=.. qpn_max=.. mrn_min=..
// mrn_max=.. (and refuses, unloading it again, if what got loaded has no
// such parameters: the stock module). Loaded without those parameters ->
// refuses. Loaded with other values -> reloads, unless contexts are open
// (module refcount > 0): then refuses. Then `rdma link add <device> type
// rxe netdev <netdev>` unless the device exists.
#pragma once
#include <string>

#include "rdma/rdma_config.hpp"
#include "rdma/rdma_host.hpp"

namespace crx::rdma {

// Returns what it did, one line per step. Throws RdmaError.
std::string setup_rxe(const RdmaConfig& cfg, RdmaHost& host);
// The module, its ranges, the devices and their port state.
std::string rxe_status(RdmaHost& host);

}  // namespace crx::rdma
