// An OCI bundle as create and restore use it: the directory, its
// config.json and where its root file system is. One resolver for both, so
// that a bundle means the same to either.
#pragma once
#include <string>

#include "spec/spec.hpp"

namespace crx::spec {

struct Bundle {
  std::string dir;     // absolute, symlinks resolved
  Spec spec;           // <dir>/config.json
  std::string rootfs;  // resolve_rootfs(spec, dir)
};

// Resolves the bundle directory ("" is ".") to its real path, loads its
// config.json and finds its rootfs. Throws crx::Error: "bundle B: <strerror>"
// (errno kept) when the directory cannot be resolved, load_spec's errors,
// resolve_rootfs's errors.
Bundle load_bundle(const std::string& dir);

// .root.path made absolute against the bundle directory (as runc does).
// Throws crx::Error("config.json: .root.path: rootfs \"/b/rootfs\" does not
// exist") when it is missing or not a directory.
std::string resolve_rootfs(const Spec& spec, const std::string& bundle_dir);

}  // namespace crx::spec
