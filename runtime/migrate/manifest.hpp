// The first frame of a migration (protocol.hpp's Manifest), as the source
// builds it from the container and this host, and the host facts the
// destination compares it with.
#pragma once
#include <string>

#include "checkpoint/container_checkpoint.hpp"
#include "migrate/protocol.hpp"

namespace crx::migrate {

// This host's kernel release (uname -r) and CRIU version ("3.17.1"; ""
// when CRIU does not answer).
struct HostVersions {
  std::string kernel;
  std::string criu;
};
HostVersions host_versions();

// "<hash of config.json>" of a bundle, as the manifest carries it.
std::string bundle_config_hash(const std::string& bundle);

// What `crx migrate` tells the receiver before anything is frozen: the
// container's id, its bundle (path, config.json and its hash), the CRIU
// flags the destination must restore with, and the source's versions.
// The verbs objects (rdma) and the inventory are the caller's to add.
Manifest source_manifest(const std::string& id, const std::string& bundle,
                         const checkpoint::CriuFlags& flags, bool send_rootfs,
                         const HostVersions& host);

}  // namespace crx::migrate
