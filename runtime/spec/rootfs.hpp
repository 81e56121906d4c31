// Where a bundle's root file system is, checked to exist.
#pragma once
#include <string>

#include "spec/spec.hpp"

namespace crx::spec {

// .root.path made absolute against the bundle directory (as runc does).
// Throws crx::Error("config.json: .root.path: rootfs \"/b/rootfs\" does not
// exist") when it is missing or not a directory.
std::string resolve_rootfs(const Spec& spec, const std::string& bundle_dir);

}  // namespace crx::spec
