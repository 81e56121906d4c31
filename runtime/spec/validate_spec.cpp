// Checks that span several parts of config.json, following runc's
// validator: what needs which namespace, and id mappings vs user namespace.
#include <array>

#include "spec/parse_parts.hpp"

namespace crx::spec::detail {
namespace {

// Field of an optional member for error paths; `fallback` when absent.
Field at(const Field& obj, std::string_view key, const Field& fallback) {
  if (!obj.json().is_object()) return fallback;
  if (auto f = obj.member(key)) return *f;
  return fallback;
}

void check_user_namespace(const Spec& s, const Field& root, const Field& linux_f) {
  const Namespace* user = s.linux.find_namespace("user");
  bool has_maps = !s.linux.uid_mappings.empty() || !s.linux.gid_mappings.empty();
  if (!user && has_maps) {
    Field where = s.linux.uid_mappings.empty() ? at(linux_f, "gidMappings", root)
                                                : at(linux_f, "uidMappings", root);
    where.fail("id mappings are set but .linux.namespaces has no user namespace");
  }
  if (user && user->path.empty()) {
    if (s.linux.uid_mappings.empty())
      Field(linux_f.json(), linux_f.path() + ".uidMappings", root.source())
          .fail("required field missing: a new user namespace needs uid mappings");
    if (s.linux.gid_mappings.empty())
      Field(linux_f.json(), linux_f.path() + ".gidMappings", root.source())
          .fail("required field missing: a new user namespace needs gid mappings");
  }
}

void check_uts(const Spec& s, const Field& root) {
  bool uts = s.linux.find_namespace("uts") != nullptr;
  if (!s.hostname.empty() && !uts)
    root.required("hostname").fail("setting the hostname needs a uts namespace");
  if (!s.domainname.empty() && !uts)
    root.required("domainname").fail("setting the domainname needs a uts namespace");
}

constexpr std::array kIpcSysctls = {"kernel.msgmax", "kernel.msgmnb", "kernel.msgmni",
                                    "kernel.sem",    "kernel.shmall", "kernel.shmmax",
                                    "kernel.shmmni", "kernel.shm_rmid_forced"};

bool is_ipc_sysctl(const std::string& key) {
  for (const char* k : kIpcSysctls)
    if (key == k) return true;
  return key.rfind("fs.mqueue.", 0) == 0;
}

// "net/ipv4/ip_forward" is the slash form of "net.ipv4.ip_forward" (runc
// takes both); in it a dot belongs to a name ("eth0.100"), so swap them.
std::string dotted(const std::string& key) {
  auto slash = key.find('/');
  auto dot = key.find('.');
  if (slash == std::string::npos || (dot != std::string::npos && dot < slash)) return key;
  std::string out = key;
  for (auto& c : out) c = c == '/' ? '.' : c == '.' ? '/' : c;
  return out;
}

// A sysctl is only namespaced if the container has the namespace it belongs
// to; anything else would change the host.
void check_sysctls(const Spec& s, const Field& linux_f) {
  if (s.linux.sysctl.empty()) return;
  Field sysctl = linux_f.required("sysctl");
  for (const auto& [raw_key, value] : s.linux.sysctl) {
    Field f = sysctl.required(raw_key);
    std::string key = dotted(raw_key);
    if (is_ipc_sysctl(key)) {
      if (!s.linux.find_namespace("ipc")) f.fail("sysctl needs an ipc namespace");
      continue;
    }
    if (key.rfind("net.", 0) == 0) {
      if (!s.linux.find_namespace("network")) f.fail("sysctl needs a network namespace");
      continue;
    }
    if (key == "kernel.hostname") f.fail("sysctl conflicts with .hostname; set that instead");
    if (key == "kernel.domainname")
      f.fail("sysctl conflicts with .domainname; set that instead");
    f.fail("sysctl is not in a separate kernel namespace");
  }
}

void check_time_namespace(const Spec& s, const Field& linux_f) {
  if (s.linux.time_offsets.empty()) return;
  const Namespace* time = s.linux.find_namespace("time");
  Field offsets = linux_f.required("timeOffsets");
  if (!time) offsets.fail("time offsets need a time namespace in .linux.namespaces");
  if (!time->path.empty())
    offsets.fail("time offsets cannot be set when joining an existing time namespace");
}

// Without a mount namespace (runc accepts that: it chroots) nothing may be
// mounted over or remounted: it would be the caller's mounts.
void check_mount_namespace(const Spec& s, const Field& linux_f) {
  if (s.linux.find_namespace("mount")) return;
  for (const char* key : {"maskedPaths", "readonlyPaths"}) {
    auto list = linux_f.member(key);
    if (list && list->json().is_array() && !list->json().empty())
      list->fail("needs a mount namespace in .linux.namespaces (runc: unable to restrict sys "
                 "entries without a private MNT namespace)");
  }
  if (!s.linux.rootfs_propagation.empty())
    linux_f.required("rootfsPropagation")
        .fail("needs a mount namespace in .linux.namespaces: it would change the propagation "
              "of the caller's \"/\"");
}

}  // namespace

void validate_cross_fields(const Spec& s, const Field& root) {
  static const nlohmann::json kNoLinux = nlohmann::json::object();
  Field linux_f = at(root, "linux", Field(kNoLinux, ".linux", root.source()));
  check_user_namespace(s, root, linux_f);
  check_uts(s, root);
  if (linux_f.json().is_object()) {
    check_sysctls(s, linux_f);
    check_time_namespace(s, linux_f);
    check_mount_namespace(s, linux_f);
  }
}

}  // namespace crx::spec::detail
