#include "checkpoint/task_files.hpp"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <memory>
#include <set>
#include <sstream>
#include <utility>

#include "common/fs.hpp"

namespace crx::checkpoint {
namespace {

constexpr std::string_view kDeleted = " (deleted)";

struct DirClose {
  void operator()(DIR* d) const { closedir(d); }
};

enum class Linked { Regular, Other, Unreadable };

// stat(2) through a /proc link: a regular file (st filled), anything else
// (a device, a socket, a pipe), or a link that could not be followed.
Linked stat_link(const std::string& link, struct stat& st) {
  if (::stat(link.c_str(), &st) != 0) return Linked::Unreadable;
  return S_ISREG(st.st_mode) ? Linked::Regular : Linked::Other;
}

// "00400000-00401000" -> "400000-401000": map_files' names have no
// leading zeros (the kernel's lookup refuses them).
std::string map_files_name(const std::string& range) {
  auto dash = range.find('-');
  auto trim = [](std::string_view s) {
    size_t nz = s.find_first_not_of('0');
    return std::string(nz == std::string_view::npos ? "0" : s.substr(nz));
  };
  std::string_view r(range);
  return trim(r.substr(0, dash)) + "-" + trim(r.substr(dash + 1));
}

class Collector {
 public:
  void add(const struct stat& st, std::string path, bool deleted, std::string link) {
    FileId id{st.st_dev, st.st_ino};
    if (!seen_.insert(id).second) return;
    scan_.files.push_back({id, st.st_size, std::move(path), deleted, std::move(link)});
  }
  void unreadable() { ++scan_.unreadable; }
  TaskFileScan take() { return std::move(scan_); }

 private:
  std::set<FileId> seen_;
  TaskFileScan scan_;
};

void add_mappings(pid_t pid, Collector& c) {
  const std::string proc = "/proc/" + std::to_string(pid);
  auto maps = read_file_if_present(proc + "/maps");
  if (!maps) return;
  std::istringstream in(*maps);
  std::set<std::pair<std::string, unsigned long>> done;  // one stat per mapped file
  for (std::string line; std::getline(in, line);) {
    MapsLine m;
    if (!parse_maps_line(line, m) || m.path.empty() || m.inode == 0) continue;
    if (!done.insert({m.dev, m.inode}).second) continue;
    std::string link = proc + "/map_files/" + m.range;
    struct stat st;
    switch (stat_link(link, st)) {
      case Linked::Regular:
        c.add(st, m.path, m.deleted, std::move(link));
        break;
      case Linked::Unreadable:
        c.unreadable();
        break;
      case Linked::Other:
        break;
    }
  }
}

void add_open_files(pid_t pid, Collector& c) {
  const std::string dir = "/proc/" + std::to_string(pid) + "/fd";
  std::unique_ptr<DIR, DirClose> d(::opendir(dir.c_str()));
  if (!d) return;
  while (dirent* e = ::readdir(d.get())) {
    if (e->d_name[0] == '.') continue;
    std::string link = dir + "/" + e->d_name;
    struct stat st;
    Linked what = stat_link(link, st);
    if (what == Linked::Unreadable) c.unreadable();
    if (what != Linked::Regular) continue;
    char buf[4096];
    ssize_t n = ::readlink(link.c_str(), buf, sizeof buf);
    if (n <= 0 || n == static_cast<ssize_t>(sizeof buf)) {
      c.unreadable();
      continue;
    }
    std::string path(buf, static_cast<size_t>(n));
    bool deleted = path.ends_with(kDeleted);
    if (deleted) path.resize(path.size() - kDeleted.size());
    c.add(st, std::move(path), deleted, std::move(link));
  }
}

}  // namespace

bool parse_maps_line(const std::string& line, MapsLine& out) {
  // "start-end perms offset dev inode [path]"; the path is the rest of the
  // line after the inode's padding, spaces included.
  std::istringstream in(line);
  std::string perms, offset;
  if (!(in >> out.range >> perms >> offset >> out.dev >> out.inode)) return false;
  if (out.range.find('-') == std::string::npos) return false;
  out.range = map_files_name(out.range);
  std::string rest;
  std::getline(in, rest);
  size_t start = rest.find_first_not_of(' ');
  out.path = start == std::string::npos ? "" : rest.substr(start);
  out.deleted = out.path.ends_with(kDeleted);
  if (out.deleted) out.path.resize(out.path.size() - kDeleted.size());
  if (!out.path.starts_with('/')) out.path.clear();  // [heap], [vdso], ...
  return true;
}

TaskFileScan task_files(const std::vector<pid_t>& pids) {
  Collector c;
  for (pid_t pid : pids) {
    add_mappings(pid, c);
    add_open_files(pid, c);
  }
  return c.take();
}

}  // namespace crx::checkpoint
