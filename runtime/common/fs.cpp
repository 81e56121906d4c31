#include "common/fs.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <filesystem>

#include "common/error.hpp"
#include "common/retry_eintr.hpp"
#include "common/unique_fd.hpp"

namespace crx {

namespace {

std::string read_all(int fd, const std::string& path) {
  std::string out;
  char buf[8192];
  for (;;) {
    ssize_t n = retry_eintr([&] { return ::read(fd, buf, sizeof buf); });
    if (n < 0) throw_errno("read " + path);
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

}  // namespace

std::string read_file(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) throw_errno("open " + path);
  return read_all(fd.get(), path);
}

std::optional<std::string> read_file_if_present(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) return std::nullopt;
  return read_all(fd.get(), path);
}

static void write_all(int fd, std::string_view data, const std::string& path) {
  while (!data.empty()) {
    ssize_t n = retry_eintr([&] { return ::write(fd, data.data(), data.size()); });
    if (n < 0) throw_errno("write " + path);
    data.remove_prefix(static_cast<size_t>(n));
  }
}

void write_file(const std::string& path, std::string_view data, mode_t mode) {
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode));
  if (!fd) throw_errno("open " + path);
  write_all(fd.get(), data, path);
}

void write_file_atomic(const std::string& path, std::string_view data, mode_t mode) {
  std::string tmp = path + ".tmp." + std::to_string(::getpid());
  {
    UniqueFd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode));
    if (!fd) throw_errno("open " + tmp);
    try {
      write_all(fd.get(), data, tmp);
    } catch (...) {
      ::unlink(tmp.c_str());
      throw;
    }
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    int err = errno;
    ::unlink(tmp.c_str());
    throw_errno("rename " + tmp + " to " + path, err);
  }
}

void mkdir_p(const std::string& path, mode_t mode) {
  std::error_code ec;
  std::filesystem::create_directories(path, ec);
  if (ec) throw Error("create directory " + path + ": " + ec.message());
  (void)mode;
}

bool path_exists(const std::string& path) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0;
}

void remove_tree(const std::string& path) {
  std::error_code ec;
  std::filesystem::remove_all(path, ec);
  if (ec) throw Error("remove " + path + ": " + ec.message());
}

std::string executable_directory() {
  char buf[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return {};
  std::string path(buf, static_cast<size_t>(n));
  auto slash = path.rfind('/');
  return slash == std::string::npos ? std::string() : path.substr(0, slash);
}

}  // namespace crx
