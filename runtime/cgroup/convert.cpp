#include "cgroup/convert.hpp"

#include <dirent.h>

#include <algorithm>

#include "common/error.hpp"

namespace crx::cgroup::convert {

std::string limit_value(int64_t v) {
  if (v < 0) return "max";
  if (v == 0) return "";
  return std::to_string(v);
}

uint64_t cpu_shares_to_weight(uint64_t shares) {
  if (shares == 0) return 0;
  shares = std::clamp<uint64_t>(shares, 2, 262144);
  return 1 + ((shares - 2) * 9999) / 262142;
}

std::string cpu_max(std::optional<int64_t> quota, std::optional<uint64_t> period) {
  bool has_quota = quota && *quota != 0;
  bool has_period = period && *period != 0;
  if (!has_quota && !has_period) return "";
  std::string q = (has_quota && *quota > 0) ? std::to_string(*quota) : "max";
  return q + " " + std::to_string(has_period ? *period : 100000);
}

std::string memory_swap_max(int64_t swap, int64_t memory) {
  // Memory unlimited and swap unset: both unlimited, as v1 behaves.
  if (memory == -1 && swap == 0) return "max";
  if (swap == -1) return "max";
  if (swap == 0) return "";
  if (memory == 0 || memory == -1)
    throw Error("cgroup: memory.swap " + std::to_string(swap) +
                " needs a memory limit (memory.swap is memory+swap)");
  if (memory < 0) throw Error("cgroup: invalid memory limit " + std::to_string(memory));
  if (swap < memory)
    throw Error("cgroup: memory.swap " + std::to_string(swap) + " is below memory.limit " +
                std::to_string(memory) + " (memory.swap is memory+swap)");
  return std::to_string(swap - memory);
}

uint64_t blkio_weight_to_io_weight(uint64_t weight) {
  if (weight == 0) return 0;
  weight = std::clamp<uint64_t>(weight, 10, 1000);
  return 1 + (weight - 10) * 9999 / 990;
}

std::string hugepage_size_name(uint64_t bytes) {
  static const char* const units[] = {"B", "KB", "MB", "GB", "TB", "PB"};
  size_t u = 0;
  double v = static_cast<double>(bytes);
  while (v >= 1024 && u + 1 < std::size(units)) {
    v /= 1024;
    ++u;
  }
  // Page sizes are powers of two, so the value is whole.
  return std::to_string(static_cast<uint64_t>(v)) + units[u];
}

std::string hugepage_dir_to_size_name(const std::string& dir_name) {
  const std::string prefix = "hugepages-", suffix = "kB";
  if (dir_name.rfind(prefix, 0) != 0 || dir_name.size() <= prefix.size() + suffix.size() ||
      dir_name.substr(dir_name.size() - suffix.size()) != suffix)
    return "";
  std::string num = dir_name.substr(prefix.size(), dir_name.size() - prefix.size() - suffix.size());
  if (num.find_first_not_of("0123456789") != std::string::npos) return "";
  return hugepage_size_name(std::stoull(num) * 1024);
}

std::vector<std::string> hugepage_sizes(const std::string& sysfs) {
  std::vector<std::string> out;
  DIR* d = ::opendir(sysfs.c_str());
  if (!d) return out;
  while (auto* e = ::readdir(d)) {
    auto name = hugepage_dir_to_size_name(e->d_name);
    if (!name.empty()) out.push_back(name);
  }
  ::closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

std::string device_rule_line(const spec::DeviceRule& rule) {
  std::string type = rule.type.empty() ? "a" : rule.type;
  auto num = [](const std::optional<int64_t>& v) {
    return (v && *v >= 0) ? std::to_string(*v) : std::string("*");
  };
  std::string access = rule.access.empty() ? "rwm" : rule.access;
  return type + " " + num(rule.major) + ":" + num(rule.minor) + " " + access;
}

}  // namespace crx::cgroup::convert
