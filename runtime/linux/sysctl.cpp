#include "linux/sysctl.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "common/error.hpp"
#include "common/retry_eintr.hpp"
#include "common/unique_fd.hpp"

namespace crx::linux_ {
namespace {

bool starts_with(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

// True when the namespace at `path` is the one crx itself runs in.
bool is_current_namespace(const std::string& path, const char* type) {
  struct stat ours {}, theirs {};
  if (::stat((std::string("/proc/self/ns/") + type).c_str(), &ours) < 0)
    throw_errno(std::string("stat /proc/self/ns/") + type);
  if (::stat(path.c_str(), &theirs) < 0) throw_errno("stat namespace " + path);
  return ours.st_dev == theirs.st_dev && ours.st_ino == theirs.st_ino;
}

bool has_own_namespace(const spec::Linux& l, const char* type) {
  const spec::Namespace* ns = l.find_namespace(type);
  if (!ns) return false;
  if (ns->path.empty()) return true;
  return !is_current_namespace(ns->path, type == std::string("network") ? "net" : type);
}

}  // namespace

// Every component of the /proc/sys path must be a plain name.
static bool valid_key(const std::string& key) {
  const std::string rel = sysctl_path(key).substr(std::string("/proc/sys/").size());
  size_t start = 0;
  for (;;) {
    const size_t end = rel.find('/', start);
    const std::string part = rel.substr(start, end - start);
    if (part.empty() || part == "." || part == "..") return false;
    if (end == std::string::npos) return true;
    start = end + 1;
  }
}

std::string sysctl_dotted(const std::string& key) {
  const auto slash = key.find('/');
  const auto dot = key.find('.');
  if (slash == std::string::npos || (dot != std::string::npos && dot < slash)) return key;
  std::string out = key;
  for (auto& ch : out) ch = ch == '/' ? '.' : ch == '.' ? '/' : ch;
  return out;
}

std::string sysctl_path(const std::string& key) {
  std::string rel = sysctl_dotted(key);
  for (auto& ch : rel) ch = ch == '.' ? '/' : ch == '/' ? '.' : ch;
  return "/proc/sys/" + rel;
}

void validate_sysctls(const spec::Linux& l) {
  static const char* ipc_keys[] = {"kernel.msgmax", "kernel.msgmnb",  "kernel.msgmni",
                                   "kernel.sem",    "kernel.shmall",  "kernel.shmmax",
                                   "kernel.shmmni", "kernel.shm_rmid_forced"};
  for (const auto& [raw_key, value] : l.sysctl) {
    const std::string key = sysctl_dotted(raw_key);
    const std::string quoted = "sysctl \"" + raw_key + "\"";
    if (!valid_key(raw_key)) throw Error(quoted + " is not a valid key");
    bool ipc = starts_with(key, "fs.mqueue.");
    for (const char* k : ipc_keys) ipc = ipc || key == k;
    if (ipc) {
      if (!has_own_namespace(l, "ipc"))
        throw Error(quoted + " is not allowed in the host's ipc namespace");
      continue;
    }
    if (starts_with(key, "net.")) {
      if (!has_own_namespace(l, "network"))
        throw Error(quoted + " is not allowed in the host's network namespace");
      continue;
    }
    if (key == "kernel.hostname")
      throw Error(quoted + " is not allowed: it conflicts with the OCI \"hostname\" field");
    if (key == "kernel.domainname") {
      if (!has_own_namespace(l, "uts"))
        throw Error(quoted + " is not allowed in the host's uts namespace");
      continue;
    }
    throw Error(quoted + " is not in a separate kernel namespace");
  }
}

void write_proc_file(const std::string& path, const std::string& value) {
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CLOEXEC));
  if (!fd) throw_errno("open " + path);
  ssize_t n = retry_eintr([&] { return ::write(fd.get(), value.data(), value.size()); });
  if (n < 0) throw_errno("write \"" + value + "\" to " + path);
  if (static_cast<size_t>(n) != value.size()) throw Error("short write to " + path);
}

void apply_sysctls(const std::map<std::string, std::string>& sysctl) {
  for (const auto& [key, value] : sysctl) {
    try {
      write_proc_file(sysctl_path(key), value);
    } catch (const Error& e) {
      throw Error("sysctl \"" + key + "\": " + e.what());
    }
  }
}

}  // namespace crx::linux_
