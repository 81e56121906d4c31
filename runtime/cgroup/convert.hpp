// Value conversions between OCI resources and cgroup files, as runc does
// them (so a config behaves the same under crx and runc). Pure functions.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "spec/spec.hpp"

namespace crx::cgroup::convert {

// A v2 limit file value: -1 (or any negative) -> "max", 0 -> "" (leave
// unset), else the number.
std::string limit_value(int64_t v);

// cpu.shares [2, 262144] -> cpu.weight [1, 10000]; 0 stays 0 (unset).
uint64_t cpu_shares_to_weight(uint64_t shares);

// cpu.max "<quota|max> <period>", "" when neither is given. A missing
// period is the kernel default 100000.
std::string cpu_max(std::optional<int64_t> quota, std::optional<uint64_t> period);

// OCI memory.swap is memory+swap; v2 memory.swap.max is swap alone.
// Returns the file value ("" = leave unset). Throws crx::Error on values
// runc also refuses (swap below memory, swap without a memory limit).
std::string memory_swap_max(int64_t swap, int64_t memory);

// blkio.weight [10, 1000] -> io.weight [1, 10000]; 0 stays 0.
uint64_t blkio_weight_to_io_weight(uint64_t weight);

// 2097152 -> "2MB", 1073741824 -> "1GB" (runc's hugetlb file names).
std::string hugepage_size_name(uint64_t bytes);
// "hugepages-2048kB" -> "2MB"; "" if the name is not of that form.
std::string hugepage_dir_to_size_name(const std::string& dir_name);
// The page sizes this kernel offers, by /sys/kernel/mm/hugepages.
std::vector<std::string> hugepage_sizes(const std::string& sysfs = "/sys/kernel/mm/hugepages");

// A v1 devices.allow/deny line: "c 1:3 rwm", "a *:* rwm".
std::string device_rule_line(const spec::DeviceRule& rule);

}  // namespace crx::cgroup::convert
