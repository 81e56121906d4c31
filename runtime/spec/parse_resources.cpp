// LinuxResources: config.json's .linux.resources and `update --resources`.
#include <cctype>

#include "spec/parse_parts.hpp"

namespace crx::spec {
namespace detail {
namespace {

DeviceRule parse_device_rule(const Field& f) {
  f.expect_object();
  DeviceRule r;
  r.allow = f.required("allow").as_bool();
  if (auto t = f.member("type")) {
    r.type = t->as_string();
    if (r.type != "a" && r.type != "c" && r.type != "b")
      t->fail("unknown device type \"" + r.type + "\" (expected a, c or b)");
  }
  r.major = optional_int<int64_t>(f, "major");
  r.minor = optional_int<int64_t>(f, "minor");
  if (auto a = f.member("access")) {
    r.access = a->as_string();
    for (char c : r.access)
      if (c != 'r' && c != 'w' && c != 'm')
        a->fail("invalid device access \"" + r.access + "\" (expected letters of rwm)");
  }
  return r;
}

MemoryLimits parse_memory(const Field& f) {
  f.expect_object();
  MemoryLimits m;
  m.limit = optional_int<int64_t>(f, "limit");
  m.reservation = optional_int<int64_t>(f, "reservation");
  m.swap = optional_int<int64_t>(f, "swap");
  m.kernel = optional_int<int64_t>(f, "kernel");
  m.kernel_tcp = optional_int<int64_t>(f, "kernelTCP");
  if (auto s = f.member("swappiness")) {
    m.swappiness = s->as_uint64();
    if (*m.swappiness > 100)
      s->fail("swappiness " + std::to_string(*m.swappiness) + " out of range [0, 100]");
  }
  // swap is memory+swap, so it cannot be below the memory limit (-1 = unlimited).
  if (m.swap && m.limit && *m.swap > 0 && *m.limit > 0 && *m.swap < *m.limit)
    f.member("swap")->fail("memory+swap limit " + std::to_string(*m.swap) +
                           " is below the memory limit " + std::to_string(*m.limit));
  m.disable_oom_killer = optional_bool(f, "disableOOMKiller");
  m.use_hierarchy = optional_bool(f, "useHierarchy");
  m.check_before_update = optional_bool(f, "checkBeforeUpdate");
  return m;
}

// "0-3,8,10-11": what cpuset.cpus and cpuset.mems take.
void check_cpu_list(const Field& f, const std::string& list, const char* what) {
  bool ok = !list.empty();
  size_t i = 0;
  while (ok && i < list.size()) {
    auto number = [&] {
      size_t start = i;
      while (i < list.size() && std::isdigit(static_cast<unsigned char>(list[i]))) ++i;
      return i > start;
    };
    ok = number();
    if (ok && i < list.size() && list[i] == '-') {
      ++i;
      ok = number();
    }
    if (ok && i < list.size()) ok = list[i++] == ',' && i < list.size();
  }
  if (!ok) f.fail(std::string("invalid ") + what + " list \"" + list + "\" (expected e.g. \"0-3,8\")");
}

CpuLimits parse_cpu(const Field& f) {
  f.expect_object();
  CpuLimits c;
  c.shares = optional_int<uint64_t>(f, "shares");
  c.quota = optional_int<int64_t>(f, "quota");
  c.burst = optional_int<uint64_t>(f, "burst");
  c.period = optional_int<uint64_t>(f, "period");
  c.realtime_runtime = optional_int<int64_t>(f, "realtimeRuntime");
  c.realtime_period = optional_int<uint64_t>(f, "realtimePeriod");
  if (auto cpus = f.member("cpus")) {
    c.cpus = cpus->as_string();
    if (!c.cpus.empty()) check_cpu_list(*cpus, c.cpus, "cpu");
  }
  if (auto mems = f.member("mems")) {
    c.mems = mems->as_string();
    if (!c.mems.empty()) check_cpu_list(*mems, c.mems, "memory node");
  }
  c.idle = optional_int<int64_t>(f, "idle");
  return c;
}

std::optional<uint16_t> blkio_weight(const Field& f, std::string_view key) {
  auto w = optional_int<uint16_t>(f, key);
  if (w && *w != 0 && (*w < 10 || *w > 1000))
    f.member(key)->fail("weight " + std::to_string(*w) + " out of range [10, 1000]");
  return w;
}

BlockIoDevice parse_blkio_device(const Field& f, bool throttle) {
  f.expect_object();
  BlockIoDevice d;
  d.major = f.required("major").as_int64();
  d.minor = f.required("minor").as_int64();
  if (throttle) {
    d.rate = f.required("rate").as_uint64();
  } else {
    d.weight = blkio_weight(f, "weight");
    d.leaf_weight = blkio_weight(f, "leafWeight");
  }
  return d;
}

std::vector<BlockIoDevice> blkio_devices(const Field& f, std::string_view key, bool throttle) {
  std::vector<BlockIoDevice> out;
  if (auto list = f.member(key))
    list->for_each_element(
        [&](const Field& e) { out.push_back(parse_blkio_device(e, throttle)); });
  return out;
}

BlockIoLimits parse_block_io(const Field& f) {
  f.expect_object();
  BlockIoLimits b;
  b.weight = blkio_weight(f, "weight");
  b.leaf_weight = blkio_weight(f, "leafWeight");
  b.weight_device = blkio_devices(f, "weightDevice", false);
  b.throttle_read_bps_device = blkio_devices(f, "throttleReadBpsDevice", true);
  b.throttle_write_bps_device = blkio_devices(f, "throttleWriteBpsDevice", true);
  b.throttle_read_iops_device = blkio_devices(f, "throttleReadIOPSDevice", true);
  b.throttle_write_iops_device = blkio_devices(f, "throttleWriteIOPSDevice", true);
  return b;
}

HugepageLimit parse_hugepage(const Field& f) {
  f.expect_object();
  HugepageLimit h;
  auto size = f.required("pageSize");
  h.page_size = size.as_string();
  // "2MB", "1GB", "64KB": digits then a unit, as in hugetlb.<size>.limit_in_bytes
  size_t digits = 0;
  while (digits < h.page_size.size() && std::isdigit(static_cast<unsigned char>(h.page_size[digits])))
    ++digits;
  std::string unit = h.page_size.substr(digits);
  if (digits == 0 || (unit != "KB" && unit != "MB" && unit != "GB"))
    size.fail("invalid hugepage size \"" + h.page_size + "\" (expected e.g. \"2MB\")");
  h.limit = f.required("limit").as_uint64();
  return h;
}

}  // namespace

Resources parse_resources_field(const Field& f) {
  f.expect_object();
  Resources r;
  if (auto d = f.member("devices"))
    d->for_each_element([&](const Field& e) { r.devices.push_back(parse_device_rule(e)); });
  if (auto m = f.member("memory")) r.memory = parse_memory(*m);
  if (auto c = f.member("cpu")) r.cpu = parse_cpu(*c);
  if (auto p = f.member("pids")) r.pids_limit = p->required("limit").as_int64();
  if (auto b = f.member("blockIO")) r.block_io = parse_block_io(*b);
  if (auto h = f.member("hugepageLimits"))
    h->for_each_element([&](const Field& e) { r.hugepage_limits.push_back(parse_hugepage(e)); });
  if (auto u = f.member("unified")) {
    u->for_each_member([&](const std::string& key, const Field& v) {
      if (key.empty() || key.find('/') != std::string::npos || key == "." || key == "..")
        v.fail("unified key must be a cgroup file name");
      r.unified[key] = v.as_string();
    });
  }
  return r;
}

}  // namespace detail

Resources parse_resources(const nlohmann::json& doc, const std::string& source) {
  return detail::parse_resources_field(detail::Field(doc, "", source));
}

}  // namespace crx::spec
