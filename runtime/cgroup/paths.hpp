// Pure path logic of the cgroup driver: where a container's cgroup lives in
// each hierarchy. Everything here works on text (mountinfo, /proc/self/cgroup)
// so it is unit-tested without root.
#pragma once
#include <map>
#include <string>
#include <vector>

namespace crx::cgroup {

// A mounted cgroup hierarchy from /proc/self/mountinfo.
struct Hierarchy {
  std::string mountpoint;
  std::string root;                      // the mount's root inside the hierarchy
  bool v2 = false;
  std::vector<std::string> controllers;  // v1: "cpu", "name=systemd", ...
  std::vector<std::string> super_options;  // the superblock's: "rw", "nsdelegate", ...
};

std::vector<Hierarchy> parse_mountinfo(const std::string& text);
// "4:memory:/a" -> {"memory": "/a"}; "2:cpu,cpuacct:/" -> both; "0::/x" -> {"": "/x"}.
std::map<std::string, std::string> parse_proc_cgroup(const std::string& text);

// runc's CleanPath: lexical, never above the start ("../a" -> "a",
// "/a/../../b" -> "/b"); relative stays relative.
std::string clean_cgroup_path(const std::string& path);

// systemd "slice:prefix:name" -> the path systemd gives the scope:
// "system.slice:crx:abc" -> "/system.slice/crx-abc.scope",
// "a-b.slice:p:n" -> "/a.slice/a-b.slice/p-n.scope". Throws on a bad form.
std::string systemd_cgroup_path(const std::string& cgroups_path, const std::string& id);

// Where the container's directories go, controller -> directory. The keys
// are v1 controller names (both of "cpu,cpuacct") and "unified" for the
// cgroup2 directory. `own` is parse_proc_cgroup() of the caller.
struct Placement {
  std::vector<Hierarchy> hierarchies;   // only those below the cgroup root
  std::map<std::string, std::string> own;
  bool use_v1 = true;                   // false on pure v2
};
std::map<std::string, std::string> container_dirs(const Placement& where,
                                                  const std::string& inner_path);

// The hierarchy `dir` lies on: the one with the longest mount point that
// is `dir` or a parent of it; nullptr if none.
const Hierarchy* hierarchy_of(const std::vector<Hierarchy>& hierarchies, const std::string& dir);

// CRIU's cgroup roots for a restore into a container's directories (what
// container_dirs() made): for each controller the path of its directory
// inside its hierarchy ("/crx/abc"), so the restored tasks land in the new
// container's cgroup, not in the checkpointed one's. The cgroup2 directory
// ("unified") becomes the default root (controller ""), as runc passes it.
std::vector<std::pair<std::string, std::string>> criu_cgroup_roots(
    const std::vector<Hierarchy>& hierarchies, const std::map<std::string, std::string>& dirs);
// The same path for a pure cgroup2 cgroup (dirs holds "unified" alone):
// where CRIU's images put its tasks ("/crx/abc"); "" for v1 or hybrid.
std::string criu_v2_path(const std::vector<Hierarchy>& hierarchies,
                         const std::map<std::string, std::string>& dirs);

}  // namespace crx::cgroup
