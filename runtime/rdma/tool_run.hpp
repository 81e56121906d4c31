// Runs a tool (rdma, modprobe) and collects its output and exit status.
#pragma once
#include <string>
#include <vector>

namespace crx::rdma {

struct ToolResult {
  int status = 0;      // raw wait status
  std::string out;     // stdout
  std::string err;     // stderr
  bool ok() const;     // exited with 0
  // "exited with status 1: <last stderr line>"
  std::string failure() const;
};

// Throws RdmaError(ToolFailed) with errno when the tool cannot be started.
ToolResult run_tool(const std::vector<std::string>& argv);

}  // namespace crx::rdma
