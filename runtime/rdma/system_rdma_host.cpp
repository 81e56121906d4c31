#include "rdma/system_rdma_host.hpp"

#include <dirent.h>

#include <algorithm>
#include <cerrno>
#include <memory>

#include "common/fs.hpp"
#include "rdma/rdma_error.hpp"
#include "rdma/tool_run.hpp"

namespace crx::rdma {
namespace {

std::optional<std::string> read_trimmed(const std::string& path) {
  auto s = read_file_if_present(path);
  if (!s) return std::nullopt;
  while (!s->empty() && (s->back() == '\n' || s->back() == ' ')) s->pop_back();
  return s;
}

void run_or_throw(const std::vector<std::string>& argv) {
  ToolResult r = run_tool(argv);
  if (!r.ok()) {
    std::string cmd;
    for (const auto& a : argv) cmd += (cmd.empty() ? "" : " ") + a;
    throw RdmaError(RdmaCause::ToolFailed, cmd + " " + r.failure());
  }
}

}  // namespace

bool SystemRdmaHost::module_loaded() { return path_exists(sys_ + "/module/rdma_rxe"); }

std::optional<std::string> SystemRdmaHost::module_param(const std::string& name) {
  return read_trimmed(sys_ + "/module/rdma_rxe/parameters/" + name);
}

int SystemRdmaHost::module_refcount() {
  auto s = read_trimmed(sys_ + "/module/rdma_rxe/refcnt");
  return s ? std::atoi(s->c_str()) : 0;
}

std::vector<std::string> SystemRdmaHost::devices() {
  std::vector<std::string> out;
  std::string cls = sys_ + "/class/infiniband";
  DIR* d = ::opendir(cls.c_str());
  if (!d) {
    if (errno == ENOENT) return out;
    throw_rdma_errno(RdmaCause::System, "open " + cls, errno);
  }
  while (struct dirent* e = ::readdir(d)) {
    if (e->d_name[0] != '.') out.emplace_back(e->d_name);
  }
  ::closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

std::string SystemRdmaHost::port_state(const std::string& device) {
  return read_trimmed(sys_ + "/class/infiniband/" + device + "/ports/1/state").value_or("");
}

std::string SystemRdmaHost::resources_json(const std::string& kind) {
  ToolResult r = run_tool({"rdma", "-j", "resource", "show", kind});
  if (!r.ok()) throw RdmaError(RdmaCause::ToolFailed, "rdma -j resource show " + kind + " " + r.failure());
  return r.out;
}

void SystemRdmaHost::load_module(const std::vector<std::string>& params) {
  std::vector<std::string> argv{"modprobe", "rdma_rxe"};
  argv.insert(argv.end(), params.begin(), params.end());
  run_or_throw(argv);
}

void SystemRdmaHost::unload_module() { run_or_throw({"modprobe", "-r", "rdma_rxe"}); }

void SystemRdmaHost::add_rxe_link(const std::string& device, const std::string& netdev) {
  run_or_throw({"rdma", "link", "add", device, "type", "rxe", "netdev", netdev});
}

}  // namespace crx::rdma
