// cgroup v2 (the whole of a pure v2 system, the unified half of hybrid).
#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <limits>
#include <sstream>

#include "common/error.hpp"
#include "common/log.hpp"
#include "common/retry_eintr.hpp"
#include "common/unique_fd.hpp"
#include "cgroup/bpf_devices.hpp"
#include "cgroup/convert.hpp"
#include "cgroup/drivers.hpp"
#include "cgroup/fs.hpp"

namespace crx::cgroup::v2 {

namespace {

std::vector<std::string> words(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  std::string w;
  while (in >> w) out.push_back(w);
  return out;
}

void write_if_set(const std::string& dir, const std::string& file, const std::string& value) {
  if (!value.empty()) fs::write(dir, file, value);
}

void apply_cpu(const std::string& dir, const spec::CpuLimits& cpu) {
  if (cpu.realtime_runtime || cpu.realtime_period)
    throw Error("cgroup: linux.resources.cpu.realtimeRuntime/realtimePeriod are not supported "
                "on cgroup v2");
  if (!cpu.cpus.empty()) fs::write(dir, "cpuset.cpus", cpu.cpus);
  if (!cpu.mems.empty()) fs::write(dir, "cpuset.mems", cpu.mems);
  if (cpu.shares && *cpu.shares)
    fs::write(dir, "cpu.weight", std::to_string(convert::cpu_shares_to_weight(*cpu.shares)));
  write_if_set(dir, "cpu.max", convert::cpu_max(cpu.quota, cpu.period));
  if (cpu.burst) fs::write(dir, "cpu.max.burst", std::to_string(*cpu.burst));
  if (cpu.idle) fs::write(dir, "cpu.idle", std::to_string(*cpu.idle));
}

void apply_memory(const std::string& dir, const spec::MemoryLimits& m) {
  int64_t limit = m.limit.value_or(0);
  std::string swap = convert::memory_swap_max(m.swap.value_or(0), limit);
  if (!swap.empty()) {
    if (!fs::exists(dir, "memory.swap.max")) {
      if (swap != "max")
        throw Error("cgroup: memory.swap is set but " + dir +
                    "/memory.swap.max does not exist (no swap accounting)");
    } else {
      fs::write(dir, "memory.swap.max", swap);
    }
  }
  write_if_set(dir, "memory.max", convert::limit_value(limit));
  write_if_set(dir, "memory.low", convert::limit_value(m.reservation.value_or(0)));
  if (m.swappiness) log::debug("cgroup: memory.swappiness is ignored on cgroup v2");
  if (m.disable_oom_killer && *m.disable_oom_killer)
    log::debug("cgroup: memory.disableOOMKiller is ignored on cgroup v2");
  if (m.kernel || m.kernel_tcp) log::debug("cgroup: kernel memory limits are ignored on cgroup v2");
}

void apply_io(const std::string& dir, const spec::BlockIoLimits& b) {
  auto dev = [](const spec::BlockIoDevice& d) {
    return std::to_string(d.major) + ":" + std::to_string(d.minor);
  };
  // BFQ takes blkio's 1-1000 weights as they are; io.weight wants 1-10000.
  bool bfq = fs::exists(dir, "io.bfq.weight");
  auto weight = [&](uint16_t w) {
    return std::to_string(bfq ? w : convert::blkio_weight_to_io_weight(w));
  };
  const std::string weight_file = bfq ? "io.bfq.weight" : "io.weight";
  if (b.weight && *b.weight) fs::write(dir, weight_file, weight(*b.weight));
  for (const auto& d : b.weight_device)
    if (d.weight) fs::write(dir, weight_file, dev(d) + " " + weight(*d.weight));
  auto max = [&](const std::vector<spec::BlockIoDevice>& list, const char* key) {
    for (const auto& d : list)
      fs::write(dir, "io.max",
                dev(d) + " " + key + "=" + (d.rate ? std::to_string(d.rate) : "max"));
  };
  max(b.throttle_read_bps_device, "rbps");
  max(b.throttle_write_bps_device, "wbps");
  max(b.throttle_read_iops_device, "riops");
  max(b.throttle_write_iops_device, "wiops");
}

void apply_hugetlb(const std::string& dir, const std::vector<spec::HugepageLimit>& limits) {
  for (const auto& h : limits) {
    check_hugepage_size(h.page_size);
    std::string base = "hugetlb." + h.page_size;
    fs::write(dir, base + ".max", std::to_string(h.limit));
    // Reservations are charged separately; limit them alike where the kernel has them.
    if (fs::exists(dir, base + ".rsvd.max"))
      fs::write(dir, base + ".rsvd.max", std::to_string(h.limit));
  }
}

void apply_unified(const std::string& dir, const std::map<std::string, std::string>& unified) {
  for (const auto& [key, value] : unified) {
    if (key.empty() || key.find('/') != std::string::npos || key.find("..") != std::string::npos ||
        key.front() == '.')
      throw Error("cgroup: linux.resources.unified: \"" + key + "\" is not a cgroup file name");
    try {
      fs::write(dir, key, value);
    } catch (const Error& e) {
      if (!fs::exists(dir, key)) {
        auto ctrl = key.substr(0, key.find('.'));
        throw Error("cgroup: linux.resources.unified: " + dir + "/" + key +
                    " does not exist (is the " + ctrl + " controller enabled?)");
      }
      throw;
    }
  }
}

// The freezer's "frozen" field of cgroup.events. A change of the file is
// announced to poll() as POLLPRI on an fd that read it before (cgroup-v2
// documentation, "cgroup.events"): the wait ends when the state does, not
// at the next tick of a sleep loop (which added up to 10 ms to a freeze in
// the migration's frozen window). Each wait is bounded in case an event
// is missed: the file is read again at least every 100 ms.
bool wait_for_frozen_state(const std::string& dir, bool frozen) {
  using namespace std::chrono_literals;
  using Clock = std::chrono::steady_clock;
  const std::string path = dir + "/cgroup.events";
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) throw_errno("cgroup: open " + path);
  const auto deadline = Clock::now() + 10s;
  for (;;) {
    char buf[512];
    ssize_t n = retry_eintr([&] { return ::pread(fd.get(), buf, sizeof buf - 1, 0); });
    if (n < 0) throw_errno("cgroup: read " + path);
    auto ev = fs::parse_flat_keyed(std::string(buf, static_cast<size_t>(n)));
    if ((ev["frozen"] == 1) == frozen) return true;
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
    if (left <= 0ms) return false;
    const int wait_ms = static_cast<int>(std::min(left, 100ms).count());
    struct pollfd p{fd.get(), POLLPRI, 0};
    if (retry_eintr([&] { return ::poll(&p, 1, wait_ms); }) < 0)
      throw_errno("cgroup: poll " + path);
  }
}

}  // namespace

std::vector<std::string> available_controllers(const std::string& dir) {
  auto v = fs::read_if_exists(dir, "cgroup.controllers");
  return v ? words(*v) : std::vector<std::string>{};
}

void enable_controllers(const std::string& mountpoint, const std::string& leaf,
                        const std::vector<std::string>& wanted) {
  if (wanted.empty() || leaf.size() <= mountpoint.size()) return;
  std::string dir = mountpoint;
  std::string rest = leaf.substr(mountpoint.size());  // "/a/b/leaf"
  for (;;) {
    auto enabled = words(fs::read_if_exists(dir, "cgroup.subtree_control").value_or(""));
    for (const auto& c : available_controllers(dir)) {
      bool want = false, on = false;
      for (const auto& w : wanted) want |= w == c;
      for (const auto& e : enabled) on |= e == c;
      if (!want || on) continue;
      // One at a time: a controller that cannot be enabled (e.g. the cgroup
      // has processes of its own) does not stop the others; a limit that
      // needs it fails later naming its file.
      try {
        fs::write(dir, "cgroup.subtree_control", "+" + c);
      } catch (const Error& e) {
        log::debug(e.what());
      }
    }
    auto next = rest.find('/', 1);
    if (next == std::string::npos) break;  // dir is now the leaf's parent
    dir += rest.substr(0, next);
    rest = rest.substr(next);
  }
}

void apply(const std::string& dir, const spec::Resources& res, bool pure, bool hugetlb_here) {
  if (pure) {
    if (res.cpu) apply_cpu(dir, *res.cpu);
    if (res.memory) apply_memory(dir, *res.memory);
    if (res.pids_limit && *res.pids_limit)
      fs::write(dir, "pids.max", *res.pids_limit > 0 ? std::to_string(*res.pids_limit) : "max");
    if (res.block_io) apply_io(dir, *res.block_io);
    if (!res.devices.empty()) bpf::attach_device_filter(dir, res.devices);
  }
  if (hugetlb_here) apply_hugetlb(dir, res.hugepage_limits);
  apply_unified(dir, res.unified);
}

void set_frozen(const std::string& dir, bool frozen) {
  fs::write(dir, "cgroup.freeze", frozen ? "1" : "0");
  if (wait_for_frozen_state(dir, frozen)) return;
  if (frozen) fs::write(dir, "cgroup.freeze", "0");
  throw Error("cgroup: " + dir + " did not become " + (frozen ? "frozen" : "thawed") +
              " in time (cgroup.events)");
}

bool frozen(const std::string& dir) {
  return fs::read_flat_keyed(dir, "cgroup.events")["frozen"] == 1;
}

void add_hugetlb_stats(const std::string& dir, nlohmann::json& out) {
  for (const auto& size : convert::hugepage_sizes()) {
    std::string f = "hugetlb." + size;
    if (!fs::exists(dir, f + ".current")) continue;
    nlohmann::json h;
    if (auto u = fs::read_u64(dir, f + ".current")) h["usage"] = u;
    auto max = fs::read_u64(dir, f + ".max");
    if (max && max != std::numeric_limits<uint64_t>::max()) h["max"] = max;
    h["failcnt"] = fs::read_flat_keyed(dir, f + ".events")["max"];
    out[size] = h;
  }
}

nlohmann::json stats(const std::string& dir) {
  nlohmann::json s;
  auto cpu = fs::read_flat_keyed(dir, "cpu.stat");
  auto& u = s["cpu"]["usage"];
  u = nlohmann::json::object();
  u["total"] = cpu["usage_usec"] * 1000;
  u["kernel"] = cpu["system_usec"] * 1000;
  u["user"] = cpu["user_usec"] * 1000;
  auto& t = s["cpu"]["throttling"];
  t = nlohmann::json::object();
  if (cpu["nr_periods"]) t["periods"] = cpu["nr_periods"];
  if (cpu["nr_throttled"]) t["throttledPeriods"] = cpu["nr_throttled"];
  if (cpu["throttled_usec"]) t["throttledTime"] = cpu["throttled_usec"] * 1000;

  if (fs::exists(dir, "memory.current")) {
    auto raw = fs::read_flat_keyed(dir, "memory.stat");
    auto events = fs::read_flat_keyed(dir, "memory.events");
    auto& m = s["memory"];
    if (auto f = raw.find("file"); f != raw.end() && f->second) m["cache"] = f->second;
    m["usage"] = {{"limit", fs::read_u64(dir, "memory.max")}, {"failcnt", events["max"]}};
    if (auto c = fs::read_u64(dir, "memory.current")) m["usage"]["usage"] = c;
    if (auto p = fs::read_u64(dir, "memory.peak")) m["usage"]["max"] = p;
    // runc reports swap as memory+swap, as v1's memsw did.
    m["swap"] = {{"limit", fs::read_u64(dir, "memory.swap.max")}, {"failcnt", 0}};
    uint64_t swap_use = fs::read_u64(dir, "memory.swap.current") + fs::read_u64(dir, "memory.current");
    if (swap_use) m["swap"]["usage"] = swap_use;
    m["kernel"] = {{"limit", 0}, {"failcnt", 0}};
    m["kernelTCP"] = {{"limit", 0}, {"failcnt", 0}};
    m["raw"] = raw;
  }
  if (fs::exists(dir, "pids.current")) {
    auto& p = s["pids"];
    p = nlohmann::json::object();
    if (auto c = fs::read_u64(dir, "pids.current")) p["current"] = c;
    auto max = fs::read_u64(dir, "pids.max");
    if (max && max != std::numeric_limits<uint64_t>::max()) p["limit"] = max;
  }
  if (auto io = fs::read_if_exists(dir, "io.stat")) {
    nlohmann::json bytes = nlohmann::json::array(), ios = nlohmann::json::array();
    std::istringstream in(*io);
    std::string line;
    while (std::getline(in, line)) {
      auto w = words(line);
      if (w.empty()) continue;
      auto colon = w[0].find(':');
      if (colon == std::string::npos) continue;
      uint64_t major = std::stoull(w[0].substr(0, colon)), minor = std::stoull(w[0].substr(colon + 1));
      for (size_t i = 1; i < w.size(); ++i) {
        auto eq = w[i].find('=');
        if (eq == std::string::npos) continue;
        auto key = w[i].substr(0, eq);
        uint64_t value = std::stoull(w[i].substr(eq + 1));
        auto entry = [&](const char* op) {
          return nlohmann::json{{"major", major}, {"minor", minor}, {"op", op}, {"value", value}};
        };
        if (key == "rbytes") bytes.push_back(entry("Read"));
        if (key == "wbytes") bytes.push_back(entry("Write"));
        if (key == "rios") ios.push_back(entry("Read"));
        if (key == "wios") ios.push_back(entry("Write"));
      }
    }
    auto& b = s["blkio"];
    b = nlohmann::json::object();
    if (!bytes.empty()) b["ioServiceBytesRecursive"] = bytes;
    if (!ios.empty()) b["ioServicedRecursive"] = ios;
  }
  s["hugetlb"] = nlohmann::json::object();
  add_hugetlb_stats(dir, s["hugetlb"]);
  return s;
}

}  // namespace crx::cgroup::v2
