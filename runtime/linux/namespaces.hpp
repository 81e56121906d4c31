// Namespace plumbing: clone flags for new namespaces, joining by path, and
// the id maps a parent writes for a child in a new user namespace.
#pragma once
#include <sys/types.h>

#include <string>
#include <vector>

#include "spec/spec.hpp"

namespace crx::linux_ns {

// CLONE_NEW* flags for namespaces the spec wants created (no path).
int new_namespace_flags(const spec::Linux& linux);
// True when the spec joins an existing pid namespace (needs an extra fork).
bool joins_pid_namespace(const spec::Linux& linux);

// Opens every namespace path first (so a bad path fails before anything
// changes), then setns() into them: user first, mount last.
void join_namespaces(const spec::Linux& linux);

// unshare(CLONE_NEWTIME) in the caller (it affects only children created
// afterwards) and writes linux.timeOffsets to /proc/self/timens_offsets.
void enter_new_time_namespace_for_children(const spec::Linux& linux);

// Parent side, for a child in a new user namespace: writes uid_map, gid_map
// (and "deny" to setgroups when the caller is not root on the host).
void write_id_maps(pid_t child, const spec::Linux& linux);

// /proc/<pid>/ns/<type> paths of a running container's namespaces, by OCI type.
std::vector<std::pair<std::string, std::string>> namespace_paths(pid_t pid, const spec::Linux& linux);

}  // namespace crx::linux_ns
