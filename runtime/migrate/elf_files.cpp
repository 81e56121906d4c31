#include "migrate/elf_files.hpp"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "checkpoint/elf_build_id.hpp"
#include "checkpoint/image_dirs.hpp"
#include "common/error.hpp"
#include "common/unique_fd.hpp"

namespace crx::migrate {
namespace {

// dest is path or one of its parent directories.
bool covers_path(std::string dest, const std::string& path) {
  while (dest.size() > 1 && dest.back() == '/') dest.pop_back();
  if (dest == "/") return true;
  return path == dest || (path.starts_with(dest) && path[dest.size()] == '/');
}

// The file at p, opened read-only inside p.root (openat2 RESOLVE_IN_ROOT,
// as the restored task resolves it); invalid with errno set when it
// cannot be.
UniqueFd open_in(const HostPlace& p) {
  UniqueFd root(::open(p.root.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!root) return root;
  struct open_how how{};
  how.flags = O_RDONLY | O_CLOEXEC;
  how.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS;
  const size_t first = p.path.find_first_not_of('/');
  const std::string rel = first == std::string::npos ? "." : p.path.substr(first);
  return UniqueFd(static_cast<int>(::syscall(SYS_openat2, root.get(), rel.c_str(), &how, sizeof how)));
}

// The build-id of the file a /proc link names; throws when it cannot be
// opened or read.
std::optional<std::string> build_id_of(const std::string& link) {
  UniqueFd fd(::open(link.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) throw_errno("open " + link);
  return checkpoint::elf_build_id(fd.get());
}

// f's path, resolved here as host_place() tells the destination to, is f.
bool found_where_the_destination_looks(const checkpoint::TaskFile& f, const spec::Spec& s,
                                       const std::string& bundle) {
  auto place = host_place(s, bundle, f.path);
  if (!place) return false;
  UniqueFd fd = open_in(*place);
  struct stat st;
  return fd && ::fstat(fd.get(), &st) == 0 && st.st_dev == f.id.dev && st.st_ino == f.id.ino;
}

}  // namespace

nlohmann::json elf_files_to_json(const std::vector<ElfFile>& files) {
  auto j = nlohmann::json::array();
  for (const auto& f : files) j.push_back({{"path", f.path}, {"size", f.size}, {"build_id", f.build_id}});
  return j;
}

std::vector<ElfFile> elf_files_from_json(const nlohmann::json& j) {
  if (!j.is_array()) throw Error("malformed manifest frame: \"elf_files\" is not an array", Cause::Invalid);
  std::vector<ElfFile> files;
  for (const auto& f : j) {
    if (!f.is_object() || !f.contains("path") || !f["path"].is_string() || !f.contains("size") ||
        !f["size"].is_number_unsigned() || !f.contains("build_id") || !f["build_id"].is_string())
      throw Error("malformed manifest frame: \"elf_files\": an entry without path, size or build_id",
                  Cause::Invalid);
    files.push_back({f["path"].get<std::string>(), f["size"].get<uint64_t>(),
                     f["build_id"].get<std::string>()});
    if (!files.back().path.starts_with('/'))
      throw Error("malformed manifest frame: \"elf_files\": path \"" + files.back().path +
                      "\" is not absolute",
                  Cause::Invalid);
  }
  return files;
}

ElfFilesSeen::ElfFilesSeen(const std::vector<pid_t>& pids, const spec::Spec& s,
                           const std::string& bundle) {
  // A file left out of read_ here (not listed, unreadable, missed) is
  // looked at again by covers() in the frozen window.
  for (const auto& f : checkpoint::task_files(pids).files) {
    if (f.deleted) {
      read_.insert(f.id);  // CRIU carries its contents
      continue;
    }
    try {
      if (auto id = build_id_of(f.proc_link)) {
        if (!found_where_the_destination_looks(f, s, bundle)) continue;
        elf_.push_back({f.path, static_cast<uint64_t>(f.size), *id});
      }
      read_.insert(f.id);
    } catch (const std::exception&) {
    }
  }
}

bool ElfFilesSeen::covers(const std::vector<pid_t>& pids) const noexcept {
  try {
    auto scan = checkpoint::task_files(pids);
    if (scan.unreadable > 0) return false;
    for (const auto& f : scan.files)
      if (!f.deleted && !read_.contains(f.id) && build_id_of(f.proc_link)) return false;
    return true;
  } catch (const std::exception&) {
    return false;
  }
}

std::optional<HostPlace> host_place(const spec::Spec& s, const std::string& bundle,
                                    const std::string& path) {
  // Mounts apply in order: the last one over the path is what it shows.
  const spec::Mount* over = nullptr;
  for (const auto& m : s.mounts)
    if (covers_path(m.destination, path)) over = &m;
  if (over) {
    if (!checkpoint::is_bind_mount(*over)) return std::nullopt;
    std::string dest = over->destination;
    while (dest.size() > 1 && dest.back() == '/') dest.pop_back();
    if (path == dest) return HostPlace{"/", over->source};  // a file bind-mounted
    return HostPlace{over->source, dest == "/" ? path : path.substr(dest.size())};
  }
  std::string root = s.root.path.starts_with('/') ? s.root.path : bundle + "/" + s.root.path;
  return HostPlace{root, path};
}

ElfFilesChecked check_elf_files(const spec::Spec& s, const std::string& bundle,
                                const std::vector<ElfFile>& files,
                                const std::function<FoundFile(const HostPlace&)>& look) {
  ElfFilesChecked c;
  c.all_same = true;
  for (const auto& f : files) {
    auto place = host_place(s, bundle, f.path);
    if (!place) {
      c.all_same = false;
      continue;
    }
    FoundFile here = look(*place);
    const std::string what = "file " + f.path + ", which the container maps or holds open,";
    switch (here.state) {
      case FoundFile::State::Unreadable:
        c.all_same = false;
        break;
      case FoundFile::State::Missing:
        c.refusals.push_back(what + " does not exist on the destination");
        break;
      case FoundFile::State::Found:
        if (here.size != f.size)
          c.refusals.push_back(what + " differs on the destination (" + std::to_string(here.size) +
                               " bytes here, " + std::to_string(f.size) + " on the source)");
        else if (here.build_id != f.build_id)
          c.refusals.push_back(what + " differs on the destination (build-id " +
                               here.build_id.value_or("none") + " here, " + f.build_id +
                               " on the source)");
        break;
    }
  }
  if (!c.refusals.empty()) c.all_same = false;
  return c;
}

FoundFile look_on_host(const HostPlace& p) {
  UniqueFd fd = open_in(p);
  if (!fd) return {errno == ENOENT || errno == ENOTDIR ? FoundFile::State::Missing
                                                       : FoundFile::State::Unreadable};
  struct stat st;
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) return {FoundFile::State::Unreadable};
  FoundFile f{FoundFile::State::Found, static_cast<uint64_t>(st.st_size), std::nullopt};
  try {
    f.build_id = checkpoint::elf_build_id(fd.get());
  } catch (const std::exception&) {
    return {FoundFile::State::Unreadable};
  }
  return f;
}

}  // namespace crx::migrate
