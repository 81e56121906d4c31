// Resolving container paths inside the rootfs without escaping it.
#pragma once
#include <string>

namespace crx::paths {

// Joins `unsafe` under `root`, resolving each symlink as if `root` were "/",
// so "../../etc" or a symlink to "/etc" never leaves the rootfs.
// Components that do not exist yet are appended as they are.
std::string secure_join(const std::string& root, const std::string& unsafe);

// Lexical clean-up: collapses "//", "/./" and "x/.." (never above "/").
std::string clean(const std::string& path);

}  // namespace crx::paths
