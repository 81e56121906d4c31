#include "checkpoint/criu_plugins.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>

#include "common/error.hpp"
#include "common/fs.hpp"
#include "common/retry_eintr.hpp"
#include "common/unique_fd.hpp"

namespace crx::checkpoint {
namespace {

// How CRIU (another process) opens `name` in our directory fd.
std::string fd_path(int dir_fd, const char* name) {
  return "/proc/" + std::to_string(::getpid()) + "/fd/" + std::to_string(dir_fd) + "/" + name;
}

bool is_directory(const std::string& path) {
  struct stat st{};
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

}  // namespace

std::string choose_criu_plugin_dir(const char* env, const std::string& exe_dir,
                                   const std::function<bool(const std::string&)>& is_dir) {
  if (env) return env;
  if (exe_dir.empty()) return {};
  for (const char* rel : {"/criu-plugins", "/../lib/crx/criu-plugins"}) {
    std::string d = exe_dir + rel;
    if (is_dir(d)) return d;
  }
  return {};
}

std::string criu_plugin_dir() {
  return choose_criu_plugin_dir(std::getenv(kCriuLibdirEnv), executable_directory(), is_directory);
}

std::string verbs_plugin_path() {
  std::string path = criu_plugin_dir();
  if (path.empty()) path = kCriuDefaultLibdir;
  path.append("/").append(kVerbsPluginName);
  return path;
}

std::string make_no_plugins_dir(int dir_fd) {
  if (::mkdirat(dir_fd, kNoPluginsDir, 0700) != 0 && errno != EEXIST)
    throw_errno(std::string("make ") + kNoPluginsDir + " for CRIU");
  return fd_path(dir_fd, kNoPluginsDir);
}

std::string write_criu_config(int dir_fd, const std::string& libdir,
                              const std::vector<std::string>& more) {
  UniqueFd fd(::openat(dir_fd, kCriuConfigName, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
  if (!fd) throw_errno(std::string("write ") + kCriuConfigName + " for CRIU");
  // CRIU's config syntax: a long option without dashes, its value.
  std::string text = libdir.empty() ? "" : "libdir " + libdir + "\n";
  for (const auto& line : more) text += line + "\n";
  size_t off = 0;
  while (off < text.size()) {
    ssize_t n = retry_eintr([&] { return ::write(fd.get(), text.data() + off, text.size() - off); });
    if (n < 0) throw_errno(std::string("write ") + kCriuConfigName + " for CRIU");
    off += static_cast<size_t>(n);
  }
  return fd_path(dir_fd, kCriuConfigName);
}

}  // namespace crx::checkpoint
