#include "checkpoint/nft_lock_tables.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <vector>

#include "common/error.hpp"
#include "common/retry_eintr.hpp"
#include "common/unique_fd.hpp"

namespace crx::checkpoint {
namespace {

constexpr std::string_view kLockPrefix = "table inet CRIU-";

// "table inet CRIU-<digits> {": the first line of a lock table.
bool opens_lock_table(std::string_view line) {
  if (line.substr(0, kLockPrefix.size()) != kLockPrefix) return false;
  line.remove_prefix(kLockPrefix.size());
  size_t digits = 0;
  while (digits < line.size() && std::isdigit(static_cast<unsigned char>(line[digits]))) ++digits;
  return digits > 0 && line.substr(digits) == " {";
}

// The lines of text, each with its '\n' (the last may lack one).
std::vector<std::string_view> lines_of(std::string_view text) {
  std::vector<std::string_view> out;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    size_t n = nl == std::string_view::npos ? text.size() : nl + 1;
    out.push_back(text.substr(0, n));
    text.remove_prefix(n);
  }
  return out;
}

std::string_view without_newline(std::string_view line) {
  return !line.empty() && line.back() == '\n' ? line.substr(0, line.size() - 1) : line;
}

std::string read_all(int dir, const char* name) {
  UniqueFd fd(::openat(dir, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (!fd) throw_errno(std::string("open ") + name);
  std::string out;
  char buf[8192];
  for (;;) {
    ssize_t n = retry_eintr([&] { return ::read(fd.get(), buf, sizeof buf); });
    if (n < 0) throw_errno(std::string("read ") + name);
    if (n == 0) return out;
    out.append(buf, static_cast<size_t>(n));
  }
}

void replace(int dir, const std::string& name, std::string_view data) {
  std::string tmp = "." + name + ".crx-new";
  UniqueFd fd(::openat(dir, tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!fd) throw_errno("create " + tmp);
  while (!data.empty()) {
    ssize_t n = retry_eintr([&] { return ::write(fd.get(), data.data(), data.size()); });
    if (n < 0) {
      int err = errno;
      ::unlinkat(dir, tmp.c_str(), 0);
      throw_errno("write " + tmp, err);
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
  if (::renameat(dir, tmp.c_str(), dir, name.c_str()) != 0) {
    int err = errno;
    ::unlinkat(dir, tmp.c_str(), 0);
    throw_errno("rename " + tmp + " to " + name, err);
  }
}

bool is_ruleset_image(std::string_view name) {
  constexpr std::string_view kPrefix = "nftables-", kSuffix = ".img";
  return name.size() > kPrefix.size() + kSuffix.size() && name.substr(0, kPrefix.size()) == kPrefix &&
         name.substr(name.size() - kSuffix.size()) == kSuffix;
}

}  // namespace

std::string without_criu_lock_tables(std::string_view ruleset) {
  std::vector<std::string_view> lines = lines_of(ruleset);
  std::string out;
  out.reserve(ruleset.size());
  for (size_t i = 0; i < lines.size(); ++i) {
    if (opens_lock_table(without_newline(lines[i]))) {
      size_t end = i + 1;
      while (end < lines.size() && without_newline(lines[end]) != "}") ++end;
      if (end < lines.size()) {
        i = end;  // the block, its closing line included
        continue;
      }
    }
    out.append(lines[i]);
  }
  return out;
}

std::size_t drop_criu_lock_tables(int images_dir_fd) {
  // An open of its own: readdir moves the offset, which a dup would share.
  UniqueFd own(::openat(images_dir_fd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!own) throw_errno("images dir: open");
  DIR* d = ::fdopendir(own.get());
  if (!d) throw_errno("images dir: opendir");
  own.release();  // d's now
  std::vector<std::string> names;
  errno = 0;
  while (const dirent* e = ::readdir(d)) {
    if (is_ruleset_image(e->d_name)) names.emplace_back(e->d_name);
  }
  int err = errno;
  ::closedir(d);
  if (err) throw_errno("images dir: readdir", err);
  std::size_t changed = 0;
  for (const std::string& name : names) {
    std::string text = read_all(images_dir_fd, name.c_str());
    std::string kept = without_criu_lock_tables(text);
    if (kept.size() == text.size()) continue;
    replace(images_dir_fd, name, kept);
    ++changed;
  }
  return changed;
}

}  // namespace crx::checkpoint
