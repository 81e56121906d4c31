#include "checkpoint/external_namespaces.hpp"

#include <fcntl.h>
#include <sys/stat.h>

#include <string>

#include "common/error.hpp"

namespace crx::checkpoint {
namespace {

const spec::Namespace* joined_network(const spec::Spec& s) {
  const auto* ns = s.linux.find_namespace("network");
  return ns && !ns->path.empty() ? ns : nullptr;
}

}  // namespace

bool joins_network_namespace(const spec::Spec& s) { return joined_network(s) != nullptr; }

void add_dump_external_namespaces(DumpOptions& o, const spec::Spec& s, pid_t pid) {
  if (!joined_network(s)) return;
  std::string ns = "/proc/" + std::to_string(pid) + "/ns/net";
  struct stat st{};
  if (::stat(ns.c_str(), &st) != 0) throw_errno("checkpoint: network namespace of the container (" + ns + ")");
  o.external.push_back("net[" + std::to_string(st.st_ino) + "]:" + kExternalNetnsKey);
}

std::vector<UniqueFd> add_restore_external_namespaces(RestoreOptions& o, const spec::Spec& s) {
  std::vector<UniqueFd> fds;
  const auto* ns = joined_network(s);
  if (!ns) return fds;
  UniqueFd fd(::open(ns->path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) throw_errno("restore: network namespace " + ns->path + " named in config.json");
  o.inherit_fds.push_back({kExternalNetnsKey, fd.get()});
  fds.push_back(std::move(fd));
  return fds;
}

}  // namespace crx::checkpoint
