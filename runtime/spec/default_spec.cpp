// The config.json `crx spec` writes: the same content as `runc spec`
// (runc 1.2 adds the cgroup namespace), and `--rootless` as runc's
// ToRootless turns it into one for an unprivileged user.
#include <unistd.h>

#include "spec/spec.hpp"
#include "spec/version.hpp"

namespace crx::spec {
namespace {

using nlohmann::json;

json default_capabilities() {
  json caps = json::array({"CAP_AUDIT_WRITE", "CAP_KILL", "CAP_NET_BIND_SERVICE"});
  return {{"bounding", caps}, {"effective", caps}, {"permitted", caps}, {"ambient", caps}};
}

json default_process() {
  return {
      {"terminal", true},
      {"user", {{"uid", 0}, {"gid", 0}}},
      {"args", {"sh"}},
      {"env", {"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "TERM=xterm"}},
      {"cwd", "/"},
      {"capabilities", default_capabilities()},
      {"rlimits", json::array({{{"type", "RLIMIT_NOFILE"}, {"hard", 1024}, {"soft", 1024}}})},
      {"noNewPrivileges", true},
  };
}

json mount(const char* destination, const char* type, const char* source, json options) {
  json m = {{"destination", destination}, {"type", type}, {"source", source}};
  if (!options.empty()) m["options"] = std::move(options);
  return m;
}

json default_mounts() {
  return json::array({
      mount("/proc", "proc", "proc", json::array()),
      mount("/dev", "tmpfs", "tmpfs", {"nosuid", "strictatime", "mode=755", "size=65536k"}),
      mount("/dev/pts", "devpts", "devpts",
            {"nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620", "gid=5"}),
      mount("/dev/shm", "tmpfs", "shm", {"nosuid", "noexec", "nodev", "mode=1777", "size=65536k"}),
      mount("/dev/mqueue", "mqueue", "mqueue", {"nosuid", "noexec", "nodev"}),
      mount("/sys", "sysfs", "sysfs", {"nosuid", "noexec", "nodev", "ro"}),
      mount("/sys/fs/cgroup", "cgroup", "cgroup", {"nosuid", "noexec", "nodev", "relatime", "ro"}),
  });
}

json namespaces(std::initializer_list<const char*> types) {
  json out = json::array();
  for (const char* t : types) out.push_back({{"type", t}});
  return out;
}

json default_linux() {
  return {
      {"resources", {{"devices", json::array({{{"allow", false}, {"access", "rwm"}}})}}},
      {"namespaces", namespaces({"pid", "network", "ipc", "uts", "mount", "cgroup"})},
      {"maskedPaths",
       {"/proc/acpi", "/proc/asound", "/proc/kcore", "/proc/keys", "/proc/latency_stats",
        "/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug", "/sys/firmware",
        "/proc/scsi"}},
      {"readonlyPaths",
       {"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"}},
  };
}

// runc's ToRootless: no network namespace, a user namespace mapping the
// caller to root, /sys bound from the host (sysfs needs a network
// namespace the user owns), no uid=/gid= mount options, no cgroup limits.
void make_rootless(json& spec) {
  json& lx = spec["linux"];
  json kept = json::array();
  for (const auto& ns : lx["namespaces"])
    if (ns["type"] != "network" && ns["type"] != "user") kept.push_back(ns);
  kept.push_back({{"type", "user"}});
  lx["namespaces"] = kept;
  lx["uidMappings"] = json::array({{{"containerID", 0}, {"hostID", ::geteuid()}, {"size", 1}}});
  lx["gidMappings"] = json::array({{{"containerID", 0}, {"hostID", ::getegid()}, {"size", 1}}});
  lx.erase("resources");

  for (auto& m : spec["mounts"]) {
    if (m["destination"] == "/sys") {
      m = mount("/sys", "none", "/sys", {"rbind", "nosuid", "noexec", "nodev", "ro"});
      continue;
    }
    if (!m.contains("options")) continue;
    json options = json::array();
    for (const auto& o : m["options"]) {
      std::string s = o.get<std::string>();
      if (s.rfind("uid=", 0) != 0 && s.rfind("gid=", 0) != 0) options.push_back(o);
    }
    m["options"] = options;
  }
}

}  // namespace

nlohmann::json default_spec(bool rootless) {
  json spec = {
      {"ociVersion", kOciVersion},
      {"process", default_process()},
      {"root", {{"path", "rootfs"}, {"readonly", true}}},
      {"hostname", "crx"},
      {"mounts", default_mounts()},
      {"linux", default_linux()},
  };
  if (rootless) make_rootless(spec);
  return spec;
}

}  // namespace crx::spec
