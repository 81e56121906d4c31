#include "migrate/manifest.hpp"

#include <sys/utsname.h>

#include "checkpoint/criu_options.hpp"
#include "checkpoint/criu_rpc.hpp"
#include "common/error.hpp"
#include "common/fs.hpp"
#include "migrate/rootfs_stream.hpp"

namespace crx::migrate {

HostVersions host_versions() {
  HostVersions h;
  struct utsname u{};
  ::uname(&u);
  h.kernel = u.release;
  try {
    auto v = checkpoint::criu_version();
    h.criu = std::to_string(v.major) + "." + std::to_string(v.minor) + "." +
             std::to_string(v.sublevel);
  } catch (const Error&) {
    // CRIU missing or broken here: the dump or the restore says so.
  }
  return h;
}

std::string bundle_config_hash(const std::string& bundle) {
  return sha256_file(bundle + "/config.json");
}

Manifest source_manifest(const std::string& id, const std::string& bundle,
                         const checkpoint::CriuFlags& flags, bool send_rootfs,
                         const HostVersions& host) {
  Manifest m;
  m.id = id;
  m.bundle = bundle;
  m.config_sha256 = bundle_config_hash(bundle);
  // For the receiver's checks (bind mount sources) when it has no bundle.
  m.config_json = read_file(bundle + "/config.json");
  m.send_rootfs = send_rootfs;
  m.flags.tcp_established = flags.tcp_established;
  m.flags.ext_unix_sk = flags.ext_unix_sk;
  m.flags.shell_job = flags.shell_job;
  m.flags.file_locks = flags.file_locks;
  if (flags.manage_cgroups_mode)
    m.flags.manage_cgroups_mode = checkpoint::cgroup_mode_name(*flags.manage_cgroups_mode);
  m.kernel = host.kernel;
  m.criu_version = host.criu;
  return m;
}

}  // namespace crx::migrate
