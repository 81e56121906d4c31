#include "linux/namespaces.hpp"

#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

#include "common/error.hpp"
#include "common/fs.hpp"
#include "common/unique_fd.hpp"

namespace crx::linux_ns {

int new_namespace_flags(const spec::Linux& linux) {
  int flags = 0;
  for (const auto& ns : linux.namespaces)
    if (ns.path.empty()) flags |= ns.clone_flag;
  return flags;
}

bool joins_pid_namespace(const spec::Linux& linux) {
  const auto* ns = linux.find_namespace("pid");
  return ns && !ns->path.empty();
}

void join_namespaces(const spec::Linux& linux) {
  // user first (gains the rights for the rest), mount last (paths stay valid).
  static const char* const kOrder[] = {"user", "ipc", "uts", "network", "pid", "cgroup", "time", "mount"};
  std::vector<std::pair<UniqueFd, const spec::Namespace*>> opened;
  for (const char* type : kOrder) {
    const auto* ns = linux.find_namespace(type);
    if (!ns || ns->path.empty()) continue;
    UniqueFd fd(::open(ns->path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd) throw_errno(std::string("open ") + type + " namespace " + ns->path);
    opened.emplace_back(std::move(fd), ns);
  }
  for (auto& [fd, ns] : opened) {
    if (::setns(fd.get(), ns->clone_flag) != 0)
      throw_errno("join " + ns->type + " namespace " + ns->path);
  }
}

void enter_new_time_namespace_for_children(const spec::Linux& linux) {
  if (::unshare(CLONE_NEWTIME) != 0) throw_errno("unshare time namespace");
  for (const auto& [clock, offset] : linux.time_offsets) {
    std::string line = clock + " " + std::to_string(offset.first) + " " + std::to_string(offset.second);
    write_file("/proc/self/timens_offsets", line);
  }
}

namespace {

std::string format_map(const std::vector<spec::IdMapping>& maps) {
  std::string out;
  for (const auto& m : maps)
    out += std::to_string(m.container_id) + " " + std::to_string(m.host_id) + " " +
           std::to_string(m.size) + "\n";
  return out;
}

}  // namespace

void write_id_maps(pid_t child, const spec::Linux& linux) {
  std::string proc = "/proc/" + std::to_string(child);
  if (::geteuid() != 0) write_file(proc + "/setgroups", "deny");
  if (!linux.gid_mappings.empty()) write_file(proc + "/gid_map", format_map(linux.gid_mappings));
  if (!linux.uid_mappings.empty()) write_file(proc + "/uid_map", format_map(linux.uid_mappings));
}

std::vector<std::pair<std::string, std::string>> namespace_paths(pid_t pid, const spec::Linux& linux) {
  static const std::pair<const char*, const char*> kProcName[] = {
      {"pid", "pid"}, {"network", "net"}, {"mount", "mnt"}, {"ipc", "ipc"},
      {"uts", "uts"}, {"user", "user"},  {"cgroup", "cgroup"}, {"time", "time"}};
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& ns : linux.namespaces)
    for (const auto& [type, proc] : kProcName)
      if (ns.type == type)
        out.emplace_back(type, "/proc/" + std::to_string(pid) + "/ns/" + proc);
  return out;
}

}  // namespace crx::linux_ns
