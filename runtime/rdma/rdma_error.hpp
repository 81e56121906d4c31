// Errors of the RDMA part, with their cause as a value: callers (the
// receiver's preflight, `crx rdma setup`, tests) decide on cause() and
// sys_errno(), never on the message text.
#pragma once
#include <string>

#include "common/error.hpp"

namespace crx::rdma {

enum class RdmaCause {
  NoPatchedModule,   // rdma_rxe not loaded, or loaded without crx's parameters
  NoActiveDevice,    // no RDMA device with an ACTIVE port 1
  QpnInUse,          // a QPN of the container is taken on this node
  MrnInUse,          // an MR index of the container is taken on this node
  ToolFailed,        // rdma/modprobe failed or printed something unreadable
  ModuleInUse,       // the module's ranges differ, and contexts are open
  BadConfig,         // the rdma: section of the config file
  System,            // a system call failed (sys_errno() says which errno)
  VerbsCall,         // a verbs-ext call failed (sys_errno() says which errno)
  PluginRestore,     // the CRIU plugin's restore said ok:false
  Unsupported,       // verbs objects no restore brings back yet (UC QPs)
};

const char* cause_name(RdmaCause c);

class RdmaError : public Error {
 public:
  RdmaError(RdmaCause cause, const std::string& what, int sys_errno = 0)
      : Error(what, sys_errno), cause_(cause) {}
  RdmaCause cause() const { return cause_; }

 private:
  RdmaCause cause_;
};

// RdmaError(System, "<what>: <strerror(err)>", err).
[[noreturn]] void throw_rdma_errno(RdmaCause cause, const std::string& what, int err);

}  // namespace crx::rdma
