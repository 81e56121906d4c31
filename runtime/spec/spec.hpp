// Typed, validated form of an OCI runtime-spec 1.x config.json.
// parse_spec() turns JSON into a Spec or throws crx::Error naming the JSON
// path of the problem ("config.json: .linux.namespaces[2].type: unknown
// namespace type \"foo\""). Everything after parsing works on these structs.
#pragma once
#include <sys/types.h>

#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace crx::spec {

struct User {
  uint32_t uid = 0;
  uint32_t gid = 0;
  std::optional<uint32_t> umask;
  std::vector<uint32_t> additional_gids;
};

struct Rlimit {
  int resource = 0;  // RLIMIT_* number, resolved from "RLIMIT_NOFILE"
  std::string type;  // original name
  uint64_t soft = 0;
  uint64_t hard = 0;
};

struct Capabilities {
  // Capability numbers (CAP_*), resolved through libcap at parse time.
  std::vector<int> bounding, effective, inheritable, permitted, ambient;
};

struct ConsoleSize {
  unsigned height = 0;
  unsigned width = 0;
};

struct Process {
  bool terminal = false;
  std::optional<ConsoleSize> console_size;
  User user;
  std::vector<std::string> args;
  std::vector<std::string> env;
  std::string cwd = "/";
  std::optional<Capabilities> capabilities;
  std::vector<Rlimit> rlimits;
  bool no_new_privileges = false;
  std::string apparmor_profile;
  std::optional<int> oom_score_adj;
  std::string selinux_label;
};

struct Mount {
  std::string destination;
  std::string type;
  std::string source;
  std::vector<std::string> options;  // raw, as in config.json
};

struct Hook {
  std::string path;
  std::vector<std::string> args;
  std::vector<std::string> env;
  std::optional<int> timeout;  // seconds
};

struct Hooks {
  std::vector<Hook> prestart, create_runtime, create_container, start_container,
      poststart, poststop;
  bool empty() const {
    return prestart.empty() && create_runtime.empty() && create_container.empty() &&
           start_container.empty() && poststart.empty() && poststop.empty();
  }
  // prestart or createRuntime: run by the runtime once the mounts are made
  bool has_runtime_create_hooks() const { return !prestart.empty() || !create_runtime.empty(); }
};

struct Namespace {
  std::string type;  // pid network mount ipc uts user cgroup time
  std::string path;  // empty = create a new one
  int clone_flag = 0;  // CLONE_NEW*
};

struct IdMapping {
  uint32_t container_id = 0;
  uint32_t host_id = 0;
  uint32_t size = 0;
};

struct Device {
  std::string path;
  char type = 'c';  // c, b, u, p
  int64_t major = 0;
  int64_t minor = 0;
  std::optional<uint32_t> file_mode;
  std::optional<uint32_t> uid;
  std::optional<uint32_t> gid;
};

struct DeviceRule {
  bool allow = false;
  std::string type = "a";  // a, c, b
  std::optional<int64_t> major;  // nullopt = wildcard
  std::optional<int64_t> minor;
  std::string access = "rwm";
};

struct MemoryLimits {
  std::optional<int64_t> limit, reservation, swap, kernel, kernel_tcp;
  std::optional<uint64_t> swappiness;
  std::optional<bool> disable_oom_killer, use_hierarchy, check_before_update;
};

struct CpuLimits {
  std::optional<uint64_t> shares;
  std::optional<int64_t> quota;
  std::optional<uint64_t> burst;
  std::optional<uint64_t> period;
  std::optional<int64_t> realtime_runtime;
  std::optional<uint64_t> realtime_period;
  std::string cpus, mems;
  std::optional<int64_t> idle;
};

struct BlockIoDevice {
  int64_t major = 0, minor = 0;
  std::optional<uint16_t> weight, leaf_weight;
  uint64_t rate = 0;  // for throttle entries
};

struct BlockIoLimits {
  std::optional<uint16_t> weight, leaf_weight;
  std::vector<BlockIoDevice> weight_device, throttle_read_bps_device,
      throttle_write_bps_device, throttle_read_iops_device, throttle_write_iops_device;
};

struct HugepageLimit {
  std::string page_size;  // "2MB"
  uint64_t limit = 0;
};

struct Resources {
  std::vector<DeviceRule> devices;
  std::optional<MemoryLimits> memory;
  std::optional<CpuLimits> cpu;
  std::optional<int64_t> pids_limit;
  std::optional<BlockIoLimits> block_io;
  std::vector<HugepageLimit> hugepage_limits;
  std::map<std::string, std::string> unified;  // cgroup v2 raw files
};

struct SeccompArg {
  unsigned index = 0;
  uint64_t value = 0;
  uint64_t value_two = 0;
  std::string op;  // SCMP_CMP_EQ, ...
};

struct SeccompSyscall {
  std::vector<std::string> names;
  std::string action;  // SCMP_ACT_*
  std::optional<unsigned> errno_ret;
  std::vector<SeccompArg> args;
};

struct Seccomp {
  std::string default_action;
  std::optional<unsigned> default_errno_ret;
  std::vector<std::string> architectures;  // SCMP_ARCH_*
  std::vector<std::string> flags;          // SECCOMP_FILTER_FLAG_*
  std::string listener_path;
  std::string listener_metadata;
  std::vector<SeccompSyscall> syscalls;
};

struct Linux {
  std::vector<Namespace> namespaces;
  std::vector<IdMapping> uid_mappings, gid_mappings;
  std::vector<Device> devices;
  std::string cgroups_path;
  std::optional<Resources> resources;
  std::string rootfs_propagation;  // "", private, rprivate, slave, rslave, shared, rshared, unbindable
  std::vector<std::string> masked_paths, readonly_paths;
  std::string mount_label;
  std::map<std::string, std::string> sysctl;
  std::optional<Seccomp> seccomp;
  // .linux.intelRdt: crx does not manage resctrl; create refuses the
  // schemas (and any of it on a host with resctrl), closID alone is
  // ignored where there is no RDT, as runc does.
  bool has_intel_rdt = false;
  std::string intel_rdt_clos, intel_rdt_l3_cache_schema, intel_rdt_mem_bw_schema;
  // time namespace offsets: "monotonic"/"boottime" -> {secs, nanosecs}
  std::map<std::string, std::pair<int64_t, uint32_t>> time_offsets;
  const Namespace* find_namespace(const std::string& type) const {
    for (const auto& ns : namespaces)
      if (ns.type == type) return &ns;
    return nullptr;
  }
};

struct Root {
  std::string path;  // as written; resolved against the bundle by the runtime
  bool readonly = false;
};

struct Spec {
  std::string oci_version;
  Root root;
  Process process;
  std::string hostname;
  std::string domainname;
  std::vector<Mount> mounts;
  Hooks hooks;
  std::map<std::string, std::string> annotations;
  Linux linux;
  nlohmann::json raw;  // the document as read, for hooks' state and checkpoints
};

// Parses and validates a config.json document. `source` names it in errors.
Spec parse_spec(const nlohmann::json& doc, const std::string& source = "config.json");
// Parses the text of a config.json (syntax errors name line and column).
Spec parse_spec_text(const std::string& text, const std::string& source = "config.json");
// Reads <bundle>/config.json and parses it.
Spec load_spec(const std::string& bundle_dir);
// Parses an OCI Process object alone (exec --process file.json).
Process parse_process(const nlohmann::json& doc, const std::string& source = "process.json");
// Parses a LinuxResources object alone (update --resources).
Resources parse_resources(const nlohmann::json& doc, const std::string& source = "resources");

// The config.json `crx spec` writes; rootless maps the caller's uid/gid.
nlohmann::json default_spec(bool rootless);

}  // namespace crx::spec
