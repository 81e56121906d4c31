#include "rdma/rdma_error.hpp"

#include <cstring>

namespace crx::rdma {

const char* cause_name(RdmaCause c) {
  switch (c) {
    case RdmaCause::NoPatchedModule: return "no patched rdma_rxe";
    case RdmaCause::NoActiveDevice: return "no active RDMA device";
    case RdmaCause::QpnInUse: return "QPN in use";
    case RdmaCause::MrnInUse: return "MR index in use";
    case RdmaCause::ToolFailed: return "tool failed";
    case RdmaCause::ModuleInUse: return "module in use";
    case RdmaCause::BadConfig: return "bad config";
    case RdmaCause::System: return "system call failed";
    case RdmaCause::VerbsCall: return "verbs call failed";
    case RdmaCause::PluginRestore: return "plugin restore failed";
    case RdmaCause::Unsupported: return "unsupported verbs objects";
  }
  return "?";
}

void throw_rdma_errno(RdmaCause cause, const std::string& what, int err) {
  throw RdmaError(cause, what + ": " + std::strerror(err), err);
}

}  // namespace crx::rdma
