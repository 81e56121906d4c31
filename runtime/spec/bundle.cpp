#include "spec/bundle.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "common/error.hpp"

namespace crx::spec {

std::string resolve_rootfs(const Spec& spec, const std::string& bundle_dir) {
  std::filesystem::path root(spec.root.path);
  if (root.is_relative()) root = std::filesystem::absolute(bundle_dir) / root;
  std::string path = root.lexically_normal().string();
  if (path.size() > 1 && path.back() == '/') path.pop_back();
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    int err = errno;
    if (err == ENOENT)
      throw Error("config.json: .root.path: rootfs \"" + path + "\" does not exist");
    throw Error("config.json: .root.path: rootfs \"" + path + "\": " + std::strerror(err));
  }
  if (!S_ISDIR(st.st_mode))
    throw Error("config.json: .root.path: rootfs \"" + path + "\" is not a directory");
  return path;
}

Bundle load_bundle(const std::string& dir) {
  std::string given = dir.empty() ? "." : dir;
  char real[PATH_MAX];
  if (!::realpath(given.c_str(), real)) throw_errno("bundle " + given);
  Bundle b;
  b.dir = real;
  b.spec = load_spec(b.dir);
  b.rootfs = resolve_rootfs(b.spec, b.dir);
  return b;
}

}  // namespace crx::spec
