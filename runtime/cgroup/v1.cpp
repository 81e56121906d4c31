// cgroup v1 controllers (pure v1 and the v1 half of the hybrid layout).
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <limits>
#include <sstream>
#include <thread>

#include "common/error.hpp"
#include "common/log.hpp"
#include "cgroup/convert.hpp"
#include "cgroup/drivers.hpp"
#include "cgroup/fs.hpp"

namespace crx::cgroup::v1 {

namespace {

std::string dir_of(const Dirs& dirs, const std::string& controller, const char* what) {
  auto it = dirs.find(controller);
  if (it == dirs.end())
    throw Error(std::string("cgroup: ") + what + " is set but the " + controller +
                " controller is not mounted (cgroup v1)");
  return it->second;
}

std::string parent_of(const std::string& dir) { return dir.substr(0, dir.find_last_of('/')); }

void apply_cpuset(const Dirs& dirs, const spec::CpuLimits& cpu) {
  if (cpu.cpus.empty() && cpu.mems.empty()) return;
  auto dir = dir_of(dirs, "cpuset", "linux.resources.cpu.cpus/mems");
  if (!cpu.cpus.empty()) fs::write(dir, "cpuset.cpus", cpu.cpus);
  if (!cpu.mems.empty()) fs::write(dir, "cpuset.mems", cpu.mems);
}

void apply_cpu(const Dirs& dirs, const spec::CpuLimits& cpu) {
  bool any = (cpu.shares && *cpu.shares) || (cpu.quota && *cpu.quota) ||
             (cpu.period && *cpu.period) || cpu.burst || cpu.realtime_runtime ||
             cpu.realtime_period || cpu.idle;
  if (!any) return;
  auto dir = dir_of(dirs, "cpu", "linux.resources.cpu");
  if (cpu.shares && *cpu.shares) fs::write(dir, "cpu.shares", std::to_string(*cpu.shares));
  // The kernel checks quota against the current period: if the period
  // cannot be written first, write the quota first.
  bool has_period = cpu.period && *cpu.period;
  bool has_quota = cpu.quota && *cpu.quota;
  if (has_period) {
    try {
      fs::write(dir, "cpu.cfs_period_us", std::to_string(*cpu.period));
    } catch (const Error&) {
      if (!has_quota) throw;
      fs::write(dir, "cpu.cfs_quota_us", std::to_string(*cpu.quota));
      fs::write(dir, "cpu.cfs_period_us", std::to_string(*cpu.period));
      has_quota = false;
    }
  }
  if (has_quota) fs::write(dir, "cpu.cfs_quota_us", std::to_string(*cpu.quota));
  if (cpu.burst) fs::write(dir, "cpu.cfs_burst_us", std::to_string(*cpu.burst));
  if (cpu.realtime_period)
    fs::write(dir, "cpu.rt_period_us", std::to_string(*cpu.realtime_period));
  if (cpu.realtime_runtime)
    fs::write(dir, "cpu.rt_runtime_us", std::to_string(*cpu.realtime_runtime));
  if (cpu.idle) fs::write(dir, "cpu.idle", std::to_string(*cpu.idle));
}

void apply_memory(const Dirs& dirs, const spec::MemoryLimits& m) {
  bool any = m.limit || m.reservation || m.swap || m.kernel_tcp || m.swappiness ||
             (m.disable_oom_killer && *m.disable_oom_killer);
  if (!any) return;
  auto dir = dir_of(dirs, "memory", "linux.resources.memory");
  int64_t limit = m.limit.value_or(0), swap = m.swap.value_or(0);
  if (limit && swap) {
    // memory.limit_in_bytes may never exceed memory.memsw.limit_in_bytes:
    // raise memsw first when the new limit would pass the current one.
    uint64_t cur_memsw = fs::read_u64(dir, "memory.memsw.limit_in_bytes");
    bool swap_first = swap == -1 || (limit > 0 && static_cast<uint64_t>(limit) > cur_memsw);
    if (swap_first) fs::write(dir, "memory.memsw.limit_in_bytes", std::to_string(swap));
    fs::write(dir, "memory.limit_in_bytes", std::to_string(limit));
    if (!swap_first) fs::write(dir, "memory.memsw.limit_in_bytes", std::to_string(swap));
  } else if (limit) {
    fs::write(dir, "memory.limit_in_bytes", std::to_string(limit));
  } else if (swap) {
    fs::write(dir, "memory.memsw.limit_in_bytes", std::to_string(swap));
  }
  if (m.reservation && *m.reservation)
    fs::write(dir, "memory.soft_limit_in_bytes", std::to_string(*m.reservation));
  if (m.kernel) log::debug("cgroup: linux.resources.memory.kernel is ignored (deprecated)");
  if (m.kernel_tcp && *m.kernel_tcp)
    fs::write(dir, "memory.kmem.tcp.limit_in_bytes", std::to_string(*m.kernel_tcp));
  if (m.swappiness) {
    if (*m.swappiness > 100)
      throw Error("cgroup: memory.swappiness " + std::to_string(*m.swappiness) +
                  " is out of range 0-100");
    fs::write(dir, "memory.swappiness", std::to_string(*m.swappiness));
  }
  if (m.disable_oom_killer && *m.disable_oom_killer) fs::write(dir, "memory.oom_control", "1");
}

void apply_blkio(const Dirs& dirs, const spec::BlockIoLimits& b) {
  bool any = b.weight || b.leaf_weight || !b.weight_device.empty() ||
             !b.throttle_read_bps_device.empty() || !b.throttle_write_bps_device.empty() ||
             !b.throttle_read_iops_device.empty() || !b.throttle_write_iops_device.empty();
  if (!any) return;
  auto dir = dir_of(dirs, "blkio", "linux.resources.blockIO");
  // Without CFQ (gone since 5.0) the weight files are BFQ's.
  bool bfq = !fs::exists(dir, "blkio.weight") && fs::exists(dir, "blkio.bfq.weight");
  std::string weight_file = bfq ? "blkio.bfq.weight" : "blkio.weight";
  std::string weight_dev_file = bfq ? "blkio.bfq.weight_device" : "blkio.weight_device";
  if (b.weight && *b.weight) fs::write(dir, weight_file, std::to_string(*b.weight));
  if (b.leaf_weight && *b.leaf_weight)
    fs::write(dir, "blkio.leaf_weight", std::to_string(*b.leaf_weight));
  auto dev = [](const spec::BlockIoDevice& d) {
    return std::to_string(d.major) + ":" + std::to_string(d.minor);
  };
  for (const auto& d : b.weight_device) {
    if (d.weight) fs::write(dir, weight_dev_file, dev(d) + " " + std::to_string(*d.weight));
    if (d.leaf_weight)
      fs::write(dir, "blkio.leaf_weight_device", dev(d) + " " + std::to_string(*d.leaf_weight));
  }
  auto throttle = [&](const std::vector<spec::BlockIoDevice>& list, const char* file) {
    for (const auto& d : list) fs::write(dir, file, dev(d) + " " + std::to_string(d.rate));
  };
  throttle(b.throttle_read_bps_device, "blkio.throttle.read_bps_device");
  throttle(b.throttle_write_bps_device, "blkio.throttle.write_bps_device");
  throttle(b.throttle_read_iops_device, "blkio.throttle.read_iops_device");
  throttle(b.throttle_write_iops_device, "blkio.throttle.write_iops_device");
}

void apply_devices(const Dirs& dirs, const std::vector<spec::DeviceRule>& rules) {
  if (rules.empty()) return;
  auto dir = dir_of(dirs, "devices", "linux.resources.devices");
  for (const auto& r : rules)
    fs::write(dir, r.allow ? "devices.allow" : "devices.deny", convert::device_rule_line(r));
}

}  // namespace

void init_cpuset_dir(const std::string& dir) {
  for (const char* file : {"cpuset.cpus", "cpuset.mems"}) {
    auto cur = fs::read_if_exists(dir, file);
    if (cur && cur->empty()) fs::write(dir, file, fs::read(parent_of(dir), file));
  }
}

void apply(const Dirs& dirs, const spec::Resources& res) {
  if (res.cpu) {
    apply_cpuset(dirs, *res.cpu);
    apply_cpu(dirs, *res.cpu);
  }
  if (res.memory) apply_memory(dirs, *res.memory);
  if (res.pids_limit && *res.pids_limit)
    fs::write(dir_of(dirs, "pids", "linux.resources.pids"), "pids.max",
              *res.pids_limit > 0 ? std::to_string(*res.pids_limit) : "max");
  if (res.block_io) apply_blkio(dirs, *res.block_io);
  if (!res.hugepage_limits.empty() && dirs.count("hugetlb")) {
    for (const auto& h : res.hugepage_limits) {
      check_hugepage_size(h.page_size);
      fs::write(dirs.at("hugetlb"), "hugetlb." + h.page_size + ".limit_in_bytes",
                std::to_string(h.limit));
    }
  }
  apply_devices(dirs, res.devices);
}

void set_frozen(const std::string& dir, bool frozen) {
  using namespace std::chrono_literals;
  const std::string want = frozen ? "FROZEN" : "THAWED";
  // FREEZING can last while tasks are in uninterruptible sleep; writing
  // FROZEN again retries the freeze (what runc does).
  for (int attempt = 0; attempt < 1000; ++attempt) {
    if (attempt % 50 == 0) fs::write(dir, "freezer.state", want);
    if (fs::read(dir, "freezer.state") == want) return;
    std::this_thread::sleep_for(attempt < 20 ? 1ms : 10ms);
  }
  if (frozen) fs::write(dir, "freezer.state", "THAWED");
  throw Error("cgroup: " + dir + "/freezer.state did not become " + want + " in time");
}

bool frozen(const std::string& dir) { return fs::read(dir, "freezer.state") == "FROZEN"; }

namespace {

std::vector<uint64_t> read_list(const std::string& dir, const std::string& file) {
  std::vector<uint64_t> out;
  auto v = fs::read_if_exists(dir, file);
  if (!v) return out;
  std::istringstream in(*v);
  uint64_t x;
  while (in >> x) out.push_back(x);
  return out;
}

nlohmann::json memory_entry(const std::string& dir, const std::string& prefix) {
  nlohmann::json e;
  e["limit"] = fs::read_u64(dir, prefix + ".limit_in_bytes");
  if (auto u = fs::read_u64(dir, prefix + ".usage_in_bytes")) e["usage"] = u;
  if (auto m = fs::read_u64(dir, prefix + ".max_usage_in_bytes")) e["max"] = m;
  e["failcnt"] = fs::read_u64(dir, prefix + ".failcnt");
  return e;
}

// "8:0 Read 123" lines of blkio.*_recursive.
nlohmann::json blkio_entries(const std::string& dir, const std::string& file) {
  nlohmann::json out = nlohmann::json::array();
  auto v = fs::read_if_exists(dir, file);
  if (!v) return out;
  std::istringstream in(*v);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream l(line);
    std::string dev, op;
    uint64_t value = 0;
    if (!(l >> dev >> op >> value)) continue;  // "Total N"
    auto colon = dev.find(':');
    if (colon == std::string::npos) continue;
    nlohmann::json e;
    e["major"] = std::stoull(dev.substr(0, colon));
    e["minor"] = std::stoull(dev.substr(colon + 1));
    e["op"] = op;
    e["value"] = value;
    out.push_back(e);
  }
  return out;
}

}  // namespace

nlohmann::json stats(const Dirs& dirs) {
  nlohmann::json s;
  s["cpu"] = {{"usage", nlohmann::json::object()}, {"throttling", nlohmann::json::object()}};
  if (auto it = dirs.find("cpuacct"); it != dirs.end()) {
    const auto& d = it->second;
    auto& u = s["cpu"]["usage"];
    u["total"] = fs::read_u64(d, "cpuacct.usage");
    u["percpu"] = read_list(d, "cpuacct.usage_percpu");
    u["percpu_kernel"] = read_list(d, "cpuacct.usage_percpu_sys");
    u["percpu_user"] = read_list(d, "cpuacct.usage_percpu_user");
    // cpuacct.stat is in USER_HZ ticks.
    auto st = fs::read_flat_keyed(d, "cpuacct.stat");
    uint64_t ns_per_tick = 1000000000ull / static_cast<uint64_t>(::sysconf(_SC_CLK_TCK));
    u["kernel"] = st["system"] * ns_per_tick;
    u["user"] = st["user"] * ns_per_tick;
  }
  if (auto it = dirs.find("cpu"); it != dirs.end()) {
    auto st = fs::read_flat_keyed(it->second, "cpu.stat");
    auto& t = s["cpu"]["throttling"];
    if (st["nr_periods"]) t["periods"] = st["nr_periods"];
    if (st["nr_throttled"]) t["throttledPeriods"] = st["nr_throttled"];
    if (st["throttled_time"]) t["throttledTime"] = st["throttled_time"];
  }
  if (auto it = dirs.find("memory"); it != dirs.end()) {
    const auto& d = it->second;
    auto raw = fs::read_flat_keyed(d, "memory.stat");
    auto& m = s["memory"];
    if (auto c = raw.find("total_cache"); c != raw.end() && c->second) m["cache"] = c->second;
    m["usage"] = memory_entry(d, "memory");
    m["swap"] = memory_entry(d, "memory.memsw");
    m["kernel"] = memory_entry(d, "memory.kmem");
    m["kernelTCP"] = memory_entry(d, "memory.kmem.tcp");
    m["raw"] = raw;
  }
  if (auto it = dirs.find("pids"); it != dirs.end()) {
    auto& p = s["pids"];
    p = nlohmann::json::object();
    if (auto c = fs::read_u64(it->second, "pids.current")) p["current"] = c;
    auto max = fs::read_u64(it->second, "pids.max");
    if (max && max != std::numeric_limits<uint64_t>::max()) p["limit"] = max;
  }
  if (auto it = dirs.find("blkio"); it != dirs.end()) {
    auto& b = s["blkio"];
    b = nlohmann::json::object();
    const auto& d = it->second;
    // Prefer the scheduler's (BFQ) counters, fall back to the throttle layer's.
    std::string prefix = fs::exists(d, "blkio.bfq.io_service_bytes_recursive") ? "blkio.bfq."
                                                                               : "blkio.throttle.";
    auto bytes = blkio_entries(d, prefix + "io_service_bytes_recursive");
    auto ios = blkio_entries(d, prefix + "io_serviced_recursive");
    if (!bytes.empty()) b["ioServiceBytesRecursive"] = bytes;
    if (!ios.empty()) b["ioServicedRecursive"] = ios;
  }
  s["hugetlb"] = nlohmann::json::object();
  if (auto it = dirs.find("hugetlb"); it != dirs.end()) {
    for (const auto& size : convert::hugepage_sizes()) {
      nlohmann::json h;
      const auto& d = it->second;
      std::string f = "hugetlb." + size;
      if (auto u = fs::read_u64(d, f + ".usage_in_bytes")) h["usage"] = u;
      if (auto m = fs::read_u64(d, f + ".max_usage_in_bytes")) h["max"] = m;
      h["failcnt"] = fs::read_u64(d, f + ".failcnt");
      s["hugetlb"][size] = h;
    }
  }
  return s;
}

}  // namespace crx::cgroup::v1
