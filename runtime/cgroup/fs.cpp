#include "cgroup/fs.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <limits>
#include <sstream>
#include <thread>
#include <vector>

#include "common/error.hpp"
#include "common/retry_eintr.hpp"
#include "common/unique_fd.hpp"

namespace crx::cgroup::fs {

namespace {
std::string join(const std::string& dir, const std::string& file) {
  return file.empty() ? dir : dir + "/" + file;
}
std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}
}  // namespace

void write(const std::string& dir, const std::string& file, const std::string& value) {
  std::string path = join(dir, file);
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CLOEXEC));
  if (!fd) throw_errno("cgroup: write " + value + " to " + path);
  if (retry_eintr([&] { return ::write(fd.get(), value.data(), value.size()); }) < 0) {
    throw_errno("cgroup: write " + value + " to " + path);
  }
}

std::optional<std::string> read_if_exists(const std::string& dir, const std::string& file) {
  std::string path = join(dir, file);
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) {
    if (errno == ENOENT) return std::nullopt;
    throw_errno("cgroup: read " + path);
  }
  std::string out;
  char buf[4096];
  for (;;) {
    ssize_t n = retry_eintr([&] { return ::read(fd.get(), buf, sizeof buf); });
    if (n < 0) throw_errno("cgroup: read " + path);
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  return trim(std::move(out));
}

std::string read(const std::string& dir, const std::string& file) {
  auto v = read_if_exists(dir, file);
  if (!v) throw_errno("cgroup: read " + join(dir, file), ENOENT);
  return *v;
}

bool exists(const std::string& dir, const std::string& file) {
  return ::access(join(dir, file).c_str(), F_OK) == 0;
}

uint64_t read_u64(const std::string& dir, const std::string& file) {
  auto v = read_if_exists(dir, file);
  if (!v || v->empty()) return 0;
  if (*v == "max") return std::numeric_limits<uint64_t>::max();
  try {
    // v1 reports "unlimited" as a huge number, sometimes signed (-1).
    if (v->front() == '-') return std::numeric_limits<uint64_t>::max();
    return std::stoull(*v);
  } catch (const std::exception&) {
    throw Error("cgroup: " + join(dir, file) + ": not a number: \"" + *v + "\"");
  }
}

std::map<std::string, uint64_t> read_flat_keyed(const std::string& dir, const std::string& file) {
  auto v = read_if_exists(dir, file);
  return v ? parse_flat_keyed(*v) : std::map<std::string, uint64_t>{};
}

std::map<std::string, uint64_t> parse_flat_keyed(const std::string& text) {
  std::map<std::string, uint64_t> out;
  std::istringstream in(text);
  std::string key, value;
  while (in >> key >> value) {
    try {
      out[key] = value == "max" ? std::numeric_limits<uint64_t>::max() : std::stoull(value);
    } catch (const std::exception&) {
      // a non-numeric field (e.g. freezer state) is skipped
    }
  }
  return out;
}

namespace {

std::vector<std::string> sub_dirs(const std::string& dir) {
  std::vector<std::string> out;
  DIR* d = ::opendir(dir.c_str());
  if (!d) return out;
  while (auto* e = ::readdir(d)) {
    std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    if (e->d_type == DT_DIR) out.push_back(dir + "/" + name);
  }
  ::closedir(d);
  return out;
}

}  // namespace

void remove_dir(const std::string& dir, std::chrono::steady_clock::time_point deadline) {
  for (const auto& sub : sub_dirs(dir)) remove_dir(sub, deadline);
  using namespace std::chrono_literals;
  auto delay = 1ms;
  for (;;) {
    if (::rmdir(dir.c_str()) == 0 || errno == ENOENT) return;
    int err = errno;
    if (err != EBUSY || std::chrono::steady_clock::now() >= deadline)
      throw_errno("cgroup: rmdir " + dir, err);
    std::this_thread::sleep_for(delay);
    delay = std::min(delay * 2, std::chrono::milliseconds(100));
  }
}

}  // namespace crx::cgroup::fs
