#include "linux/paths.hpp"

#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <vector>

#include "common/error.hpp"

namespace crx::paths {

namespace {

std::vector<std::string> split(const std::string& p) {
  std::vector<std::string> parts;
  size_t i = 0;
  while (i <= p.size()) {
    size_t j = p.find('/', i);
    if (j == std::string::npos) j = p.size();
    if (j > i) parts.push_back(p.substr(i, j - i));
    i = j + 1;
  }
  return parts;
}

}  // namespace

std::string clean(const std::string& path) {
  std::vector<std::string> out;
  for (auto& part : split(path)) {
    if (part == ".") continue;
    if (part == "..") {
      if (!out.empty()) out.pop_back();
      continue;
    }
    out.push_back(part);
  }
  std::string r;
  for (auto& p : out) r += "/" + p;
  return r.empty() ? "/" : r;
}

std::string secure_join(const std::string& root, const std::string& unsafe) {
  std::vector<std::string> pending = split(unsafe);
  std::vector<std::string> resolved;  // components under root, all real dirs/files
  int links = 0;
  // process from the front; pending is consumed in order
  size_t idx = 0;
  while (idx < pending.size()) {
    std::string part = pending[idx++];
    if (part == ".") continue;
    if (part == "..") {
      if (!resolved.empty()) resolved.pop_back();
      continue;
    }
    std::string rel;
    for (auto& r : resolved) rel += "/" + r;
    std::string full = root + rel + "/" + part;
    struct stat st;
    if (::lstat(full.c_str(), &st) != 0 || !S_ISLNK(st.st_mode)) {
      resolved.push_back(part);
      continue;
    }
    if (++links > 255) throw Error("resolve " + unsafe + " in " + root + ": too many symlinks");
    char buf[PATH_MAX];
    ssize_t n = ::readlink(full.c_str(), buf, sizeof buf - 1);
    if (n < 0) throw_errno("readlink " + full);
    std::string target(buf, static_cast<size_t>(n));
    if (!target.empty() && target[0] == '/') resolved.clear();
    std::vector<std::string> rest = split(target);
    rest.insert(rest.end(), pending.begin() + static_cast<long>(idx), pending.end());
    pending = std::move(rest);
    idx = 0;
  }
  std::string out = root;
  for (auto& r : resolved) out += "/" + r;
  return out;
}

}  // namespace crx::paths
