// The .linux object of config.json.
#include <sched.h>

#include <algorithm>
#include <cstdint>
#include <set>

#include "spec/parse_parts.hpp"

#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080
#endif

namespace crx::spec {
namespace detail {
namespace {

struct NamespaceType {
  const char* name;
  int clone_flag;
};
constexpr NamespaceType kNamespaceTypes[] = {
    {"pid", CLONE_NEWPID},   {"network", CLONE_NEWNET}, {"mount", CLONE_NEWNS},
    {"ipc", CLONE_NEWIPC},   {"uts", CLONE_NEWUTS},     {"user", CLONE_NEWUSER},
    {"cgroup", CLONE_NEWCGROUP}, {"time", CLONE_NEWTIME},
};

bool is_absolute(const std::string& path) { return !path.empty() && path[0] == '/'; }

Namespace parse_namespace(const Field& f) {
  f.expect_object();
  Namespace ns;
  auto type = f.required("type");
  ns.type = type.as_string();
  for (const auto& t : kNamespaceTypes)
    if (ns.type == t.name) ns.clone_flag = t.clone_flag;
  if (ns.clone_flag == 0) type.fail("unknown namespace type \"" + ns.type + "\"");
  if (auto p = f.member("path")) {
    ns.path = p->as_string();
    if (!ns.path.empty() && !is_absolute(ns.path))
      p->fail("namespace path \"" + ns.path + "\" must be absolute");
  }
  return ns;
}

IdMapping parse_id_mapping(const Field& f) {
  f.expect_object();
  IdMapping m;
  m.container_id = f.required("containerID").as<uint32_t>();
  m.host_id = f.required("hostID").as<uint32_t>();
  auto size = f.required("size");
  m.size = size.as<uint32_t>();
  if (m.size == 0) size.fail("mapping size must be above 0");
  // The last id of the range must still be a 32-bit id.
  uint64_t last = std::max(m.container_id, m.host_id) + static_cast<uint64_t>(m.size) - 1;
  if (last > UINT32_MAX) size.fail("mapping range goes past id 4294967295");
  return m;
}

std::vector<IdMapping> id_mappings(const Field& linux, std::string_view key) {
  std::vector<IdMapping> out;
  if (auto list = linux.member(key))
    list->for_each_element([&](const Field& e) { out.push_back(parse_id_mapping(e)); });
  return out;
}

Device parse_device(const Field& f) {
  f.expect_object();
  Device d;
  auto path = f.required("path");
  d.path = path.as_string();
  if (!is_absolute(d.path)) path.fail("device path \"" + d.path + "\" must be absolute");
  auto type = f.required("type");
  std::string t = type.as_string();
  if (t != "c" && t != "b" && t != "u" && t != "p")
    type.fail("unknown device type \"" + t + "\" (expected c, b, u or p)");
  d.type = t[0];
  if (d.type == 'p') {
    d.major = optional_int<int64_t>(f, "major").value_or(0);
    d.minor = optional_int<int64_t>(f, "minor").value_or(0);
  } else {
    auto major = f.required("major");
    auto minor = f.required("minor");
    d.major = major.as_int64();
    d.minor = minor.as_int64();
    if (d.major < 0) major.fail("device major number must not be negative");
    if (d.minor < 0) minor.fail("device minor number must not be negative");
  }
  if (auto m = f.member("fileMode")) {
    d.file_mode = m->as<uint32_t>();
    if (*d.file_mode > 07777) m->fail("fileMode " + std::to_string(*d.file_mode) + " is above 07777");
  }
  d.uid = optional_int<uint32_t>(f, "uid");
  d.gid = optional_int<uint32_t>(f, "gid");
  return d;
}

// maskedPaths, readonlyPaths: paths in the container; runc takes a relative
// one as relative to the container's "/" (it applies them from there), and
// so do we.
std::vector<std::string> container_paths(const Field& linux, std::string_view key) {
  std::vector<std::string> out;
  if (auto list = linux.member(key)) {
    list->for_each_element([&](const Field& e) {
      std::string p = e.as_string();
      if (p.empty()) e.fail("path must not be empty");
      out.push_back(is_absolute(p) ? std::move(p) : "/" + p);
    });
  }
  return out;
}

const std::set<std::string> kPropagations = {"",       "private",    "rprivate",
                                             "slave",  "rslave",     "shared",
                                             "rshared", "unbindable", "runbindable"};

void parse_time_offsets(const Field& f, Linux& l) {
  f.for_each_member([&](const std::string& clock, const Field& v) {
    if (clock != "monotonic" && clock != "boottime")
      v.fail("unknown clock \"" + clock + "\" (expected monotonic or boottime)");
    v.expect_object();
    int64_t secs = optional_int<int64_t>(v, "secs").value_or(0);
    uint32_t nanos = optional_int<uint32_t>(v, "nanosecs").value_or(0);
    if (nanos >= 1000000000u) v.member("nanosecs")->fail("nanosecs must be below 1000000000");
    l.time_offsets[clock] = {secs, nanos};
  });
}

}  // namespace

Linux parse_linux_field(const Field& f) {
  f.expect_object();
  Linux l;
  if (auto list = f.member("namespaces")) {
    std::set<std::string> seen;
    list->for_each_element([&](const Field& e) {
      Namespace ns = parse_namespace(e);
      if (!seen.insert(ns.type).second)
        e.fail("duplicate namespace type \"" + ns.type + "\"");
      l.namespaces.push_back(std::move(ns));
    });
  }
  l.uid_mappings = id_mappings(f, "uidMappings");
  l.gid_mappings = id_mappings(f, "gidMappings");
  if (auto list = f.member("devices"))
    list->for_each_element([&](const Field& e) { l.devices.push_back(parse_device(e)); });
  l.cgroups_path = string_or_empty(f, "cgroupsPath");
  if (auto r = f.member("resources")) l.resources = parse_resources_field(*r);
  if (auto p = f.member("rootfsPropagation")) {
    l.rootfs_propagation = p->as_string();
    if (!kPropagations.count(l.rootfs_propagation))
      p->fail("unknown rootfsPropagation \"" + l.rootfs_propagation + "\"");
  }
  l.masked_paths = container_paths(f, "maskedPaths");
  l.readonly_paths = container_paths(f, "readonlyPaths");
  l.mount_label = string_or_empty(f, "mountLabel");
  if (auto s = f.member("sysctl")) l.sysctl = s->as_string_map();
  if (auto s = f.member("seccomp")) l.seccomp = parse_seccomp_field(*s);
  if (auto rdt = f.member("intelRdt")) {
    rdt->expect_object();
    l.has_intel_rdt = true;
    l.intel_rdt_clos = string_or_empty(*rdt, "closID");
    if (l.intel_rdt_clos == "." || l.intel_rdt_clos == ".." ||
        l.intel_rdt_clos.find('/') != std::string::npos)
      rdt->required("closID").fail("invalid intelRdt.ClosID \"" + l.intel_rdt_clos + "\"");
    l.intel_rdt_l3_cache_schema = string_or_empty(*rdt, "l3CacheSchema");
    l.intel_rdt_mem_bw_schema = string_or_empty(*rdt, "memBwSchema");
  }
  if (auto t = f.member("timeOffsets")) parse_time_offsets(*t, l);
  return l;
}

}  // namespace detail
}  // namespace crx::spec
