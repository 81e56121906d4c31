// Namespaces a container joined by path instead of creating them: in
// practice its network namespace, made and configured by someone else (CNI,
// `ip netns add`) at /var/run/netns/<name>. CRIU must neither dump such a
// namespace nor make a new one on restore: the dump marks it external
// (`net[<inode>]:<key>`, as runc does) and the restore hands CRIU an fd of
// the namespace the restored container's config.json names, which CRIU then
// joins - on another host, the namespace prepared there for the container.
// The container's sockets are dumped and restored inside it as usual, so
// --tcp-established works with it.
#pragma once
#include <sys/types.h>

#include <vector>

#include "checkpoint/criu_options.hpp"
#include "common/unique_fd.hpp"
#include "spec/spec.hpp"

namespace crx::checkpoint {

// The key CRIU records for the external network namespace (runc's name).
inline constexpr const char* kExternalNetnsKey = "extRootNetNS";

// True when config.json joins a network namespace by path.
bool joins_network_namespace(const spec::Spec& s);

// Dump: if the config joins a network namespace by path, marks the one the
// init (pid) is in as external.
void add_dump_external_namespaces(DumpOptions& o, const spec::Spec& s, pid_t pid);

// Restore: if the config joins a network namespace by path, opens it and
// adds it as CRIU's inherited fd; the returned fds must stay open until
// CRIU is done. A missing path is one clear error naming it.
std::vector<UniqueFd> add_restore_external_namespaces(RestoreOptions& o, const spec::Spec& s);

}  // namespace crx::checkpoint
