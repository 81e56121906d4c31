// The per-version halves of Cgroup (internal to the cgroup files).
#pragma once
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "spec/spec.hpp"

namespace crx::cgroup {

using Dirs = std::map<std::string, std::string>;  // controller -> directory

namespace v1 {
// A new cpuset directory starts with empty cpus/mems: copy the parent's, or
// no task could join it.
void init_cpuset_dir(const std::string& dir);
// Writes every v1 part of res. Resources that only v2 can take (hugetlb on
// the unified hierarchy, the unified map) are left to the caller.
void apply(const Dirs& dirs, const spec::Resources& res);
void set_frozen(const std::string& freezer_dir, bool frozen);
bool frozen(const std::string& freezer_dir);
nlohmann::json stats(const Dirs& dirs);
}  // namespace v1

namespace v2 {
// Enables `wanted` controllers (those available) in cgroup.subtree_control
// of every directory from the mount down to the leaf's parent.
void enable_controllers(const std::string& mountpoint, const std::string& leaf,
                        const std::vector<std::string>& wanted);
std::vector<std::string> available_controllers(const std::string& dir);
// pure: this is the only hierarchy (V2 layout), so every resource goes here.
// Otherwise (hybrid) only hugetlb (when not on v1) and the unified map.
void apply(const std::string& dir, const spec::Resources& res, bool pure, bool hugetlb_here);
void set_frozen(const std::string& dir, bool frozen);
bool frozen(const std::string& dir);
nlohmann::json stats(const std::string& dir);
void add_hugetlb_stats(const std::string& dir, nlohmann::json& out);
}  // namespace v2

// Shared by both: the hugetlb page size name, checked against the kernel.
void check_hugepage_size(const std::string& page_size);

}  // namespace crx::cgroup
