#include "checkpoint/carried_tmpfs.hpp"

#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <utility>
#include <vector>

#include "common/error.hpp"
#include "common/unique_fd.hpp"

namespace crx::checkpoint {
namespace {

using ReadArchive = std::unique_ptr<struct archive, int (*)(struct archive*)>;
using Entry = std::unique_ptr<struct archive_entry, void (*)(struct archive_entry*)>;

// libarchive's message and errno (0 when it has none: a format error).
[[noreturn]] void fail(struct archive* a, const std::string& what) {
  const char* msg = archive_error_string(a);
  int err = archive_errno(a);
  throw Error(what + ": " + (msg ? msg : "libarchive error"),
              err > 0 ? cause_of_errno(err) : Cause::Invalid, err > 0 ? err : 0);
}

// "../x", "a/../b", "/x": not a name this packer writes.
bool safe_relative(const std::string& name) {
  if (name.empty() || name[0] == '/') return false;
  size_t i = 0;
  while (i <= name.size()) {
    size_t j = name.find('/', i);
    if (j == std::string::npos) j = name.size();
    if (name.compare(i, j - i, "..") == 0 && j - i == 2) return false;
    i = j + 1;
  }
  return true;
}

// Runs of a file that are not all zeros, in 4 KiB blocks: (offset, length).
// A tmpfs keeps no holes where a program wrote or faulted in zeros (PMIx's
// shared segments are mostly such pages), and CRIU's tar compressed them
// away; packed as holes they cost nothing here either, and the restored
// file reads the same.
std::vector<std::pair<int64_t, int64_t>> data_runs(int fd, int64_t size, const std::string& name) {
  constexpr size_t kBlock = 4096;
  std::vector<char> buf(64 * 1024);
  std::vector<std::pair<int64_t, int64_t>> runs;
  int64_t at = 0;
  for (;;) {
    // Up to the size in the entry's header: the tree is frozen, and a
    // file that grew anyway is cut there rather than overrun its entry.
    size_t want = static_cast<size_t>(std::min<int64_t>(size - at, buf.size()));
    if (want == 0) return runs;
    ssize_t n = ::pread(fd, buf.data(), want, at);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw_errno("read " + name);
    }
    if (n == 0) throw Error(name + " shrank while it was packed", Cause::Busy);
    for (size_t b = 0; b < static_cast<size_t>(n); b += kBlock) {
      size_t len = std::min(kBlock, static_cast<size_t>(n) - b);
      const char* p = buf.data() + b;
      if (p[0] == 0 && std::memcmp(p, p + 1, len - 1) == 0) continue;  // all zeros
      int64_t off = at + static_cast<int64_t>(b);
      if (!runs.empty() && runs.back().first + runs.back().second == off)
        runs.back().second += static_cast<int64_t>(len);
      else
        runs.emplace_back(off, static_cast<int64_t>(len));
    }
    at += n;
  }
}

// A regular file's entry with its sparse map (data_runs), then every byte
// of it: the pax writer keeps what lies in the map and drops the rest.
void write_file_entry(struct archive* out, struct archive_entry* e, const std::string& path,
                      const std::string& entry) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOATIME));
  if (!fd && errno == EPERM) fd.reset(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd) throw_errno("open " + path);
  int64_t size = archive_entry_size(e);
  auto runs = data_runs(fd.get(), size, path);
  archive_entry_sparse_clear(e);
  for (auto [off, len] : runs) archive_entry_sparse_add_entry(e, off, len);
  // As libarchive marks a file of holes only: one empty run at its end.
  if (runs.empty()) archive_entry_sparse_add_entry(e, size, 0);
  if (archive_write_header(out, e) != ARCHIVE_OK) fail(out, "writing " + entry);
  static const std::vector<char> zeros(64 * 1024);
  std::vector<char> buf(64 * 1024);
  int64_t at = 0;
  auto skip_to = [&](int64_t off) {
    while (at < off) {
      size_t n = static_cast<size_t>(std::min<int64_t>(off - at, zeros.size()));
      if (archive_write_data(out, zeros.data(), n) < 0) fail(out, "writing " + entry);
      at += static_cast<int64_t>(n);
    }
  };
  for (auto [off, len] : runs) {
    skip_to(off);
    for (int64_t end = off + len; at < end;) {
      ssize_t n = ::pread(fd.get(), buf.data(), std::min<int64_t>(end - at, buf.size()), at);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) throw_errno("read " + path);
      if (n == 0) throw Error(path + " shrank while it was packed", Cause::Busy);
      if (archive_write_data(out, buf.data(), static_cast<size_t>(n)) < 0)
        fail(out, "writing " + entry);
      at += n;
    }
  }
  // The trailing hole too: the writer puts the sparse map out with the
  // first bytes it is given, even when all of them are a hole.
  skip_to(size);
}

}  // namespace

std::string carried_tmpfs_file(const std::string& destination) {
  std::string name = "crx-tmpfs-";
  for (char c : destination) {
    if (c == '/') name += "%2F";
    else if (c == '%') name += "%25";
    else name += c;
  }
  return name + ".tar";
}

std::optional<std::string> pack_tmpfs(const std::string& dir, const std::string& images_dir,
                                      const std::string& name) {
  // Written unnamed (O_TMPFILE) and linked in when complete: a migration
  // ships each file of the images dir when it is closed under a name, so
  // neither a partial archive nor one given up on may ever have one.
  UniqueFd file(::open(images_dir.c_str(), O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600));
  if (!file) {
    if (errno == EOPNOTSUPP || errno == EISDIR)
      return images_dir + " cannot hold an unnamed file (O_TMPFILE)";
    throw_errno("create an unnamed file in " + images_dir);
  }
  ReadArchive disk(archive_read_disk_new(), archive_read_free);
  ReadArchive out(archive_write_new(), archive_write_free);
  Entry e(archive_entry_new(), archive_entry_free);
  if (!disk || !out || !e) throw Error("libarchive: out of memory", Cause::Other, ENOMEM);
  // The root may be named through a symlink (/proc/self/fd/N); below it
  // symlinks are entries of their own.
  archive_read_disk_set_symlink_hybrid(disk.get());
  archive_read_disk_set_behavior(disk.get(), ARCHIVE_READDISK_NO_TRAVERSE_MOUNTS);
  if (archive_read_disk_open(disk.get(), dir.c_str()) != ARCHIVE_OK) fail(disk.get(), "opening " + dir);
  archive_write_set_format_pax_restricted(out.get());
  if (archive_write_open_fd(out.get(), file.get()) != ARCHIVE_OK)
    fail(out.get(), "writing into " + images_dir);
  for (;;) {
    archive_entry_clear(e.get());
    int r = archive_read_next_header2(disk.get(), e.get());
    if (r == ARCHIVE_EOF) break;
    // ARCHIVE_WARN: something of the entry (an xattr, an ACL) was not
    // read; the copy would not be exact.
    if (r != ARCHIVE_OK) fail(disk.get(), "reading " + dir);
    std::string path = archive_entry_pathname(e.get());
    std::string entry = path == dir ? "." : "./" + path.substr(dir.size() + 1);
    if (archive_entry_filetype(e.get()) == AE_IFDIR) {
      archive_read_disk_descend(disk.get());
    } else if (archive_entry_nlink(e.get()) > 1) {
      return entry + " has " + std::to_string(archive_entry_nlink(e.get())) + " hard links";
    }
    if (archive_entry_filetype(e.get()) == AE_IFSOCK) continue;  // CRIU binds sockets again
    archive_entry_set_pathname(e.get(), entry.c_str());
    if (archive_entry_filetype(e.get()) == AE_IFREG && archive_entry_size(e.get()) > 0) {
      write_file_entry(out.get(), e.get(), path, entry);
      continue;
    }
    if (archive_write_header(out.get(), e.get()) != ARCHIVE_OK) fail(out.get(), "writing " + entry);
  }
  if (archive_write_close(out.get()) != ARCHIVE_OK) fail(out.get(), "writing into " + images_dir);
  std::string target = images_dir + "/" + name;
  std::string self = "/proc/self/fd/" + std::to_string(file.get());
  if (::linkat(AT_FDCWD, self.c_str(), AT_FDCWD, target.c_str(), AT_SYMLINK_FOLLOW) != 0)
    throw_errno("link " + target);
  return std::nullopt;
}

void unpack_tmpfs(const std::string& archive, const std::string& dir) {
  // Resolved first: SECURE_SYMLINKS checks every component of the names
  // written, so the prefix must be a path without symlinks.
  std::unique_ptr<char, void (*)(void*)> real(::realpath(dir.c_str(), nullptr), std::free);
  if (!real) throw_errno("resolve " + dir);
  ReadArchive in(archive_read_new(), archive_read_free);
  ReadArchive disk(archive_write_disk_new(), archive_write_free);
  if (!in || !disk) throw Error("libarchive: out of memory", Cause::Other, ENOMEM);
  archive_read_support_format_tar(in.get());
  if (archive_read_open_filename(in.get(), archive.c_str(), 64 * 1024) != ARCHIVE_OK)
    fail(in.get(), "opening " + archive);
  archive_write_disk_set_options(
      disk.get(), ARCHIVE_EXTRACT_PERM | ARCHIVE_EXTRACT_OWNER | ARCHIVE_EXTRACT_TIME |
                      ARCHIVE_EXTRACT_XATTR | ARCHIVE_EXTRACT_ACL | ARCHIVE_EXTRACT_SPARSE |
                      ARCHIVE_EXTRACT_SECURE_SYMLINKS | ARCHIVE_EXTRACT_SECURE_NODOTDOT);
  for (;;) {
    struct archive_entry* e = nullptr;
    int r = archive_read_next_header(in.get(), &e);
    if (r == ARCHIVE_EOF) break;
    if (r != ARCHIVE_OK) fail(in.get(), "reading " + archive);
    std::string name = archive_entry_pathname(e);
    if (!safe_relative(name) || archive_entry_hardlink(e))
      throw Error(archive + ": entry " + name + " is not a name crx packs (absolute, \"..\" or a "
                  "hard link)", Cause::Invalid);
    std::string full = std::string(real.get()) + "/" + name;
    archive_entry_set_pathname(e, full.c_str());
    if (archive_write_header(disk.get(), e) != ARCHIVE_OK)
      fail(disk.get(), archive + ": creating " + name + " in " + dir);
    for (;;) {
      const void* buf = nullptr;
      size_t size = 0;
      la_int64_t offset = 0;
      r = archive_read_data_block(in.get(), &buf, &size, &offset);
      if (r == ARCHIVE_EOF) break;
      if (r != ARCHIVE_OK) fail(in.get(), "reading " + archive + " at " + name);
      if (archive_write_data_block(disk.get(), buf, size, offset) != ARCHIVE_OK)
        fail(disk.get(), archive + ": writing " + name + " in " + dir);
    }
    if (archive_write_finish_entry(disk.get()) != ARCHIVE_OK)
      fail(disk.get(), archive + ": finishing " + name + " in " + dir);
  }
  // Directories' modes and times are set here, after their contents.
  if (archive_write_close(disk.get()) != ARCHIVE_OK)
    fail(disk.get(), archive + ": setting the directories' attributes in " + dir);
}

}  // namespace crx::checkpoint
