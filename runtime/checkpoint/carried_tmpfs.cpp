#include "checkpoint/carried_tmpfs.hpp"

#include <archive.h>
#include <archive_entry.h>
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <memory>
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

// "a/./b", "../x", "/x" and the like: not a name this packer writes.
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

void copy_file_data(struct archive* disk, struct archive* out, const std::string& name) {
  // Holes come from read_disk as gaps between blocks; the pax writer drops
  // the zeros it is given for them (it keeps the sparse map).
  static const std::vector<char> zeros(64 * 1024);
  int64_t done = 0;
  for (;;) {
    const void* buf = nullptr;
    size_t size = 0;
    la_int64_t offset = 0;
    int r = archive_read_data_block(disk, &buf, &size, &offset);
    if (r == ARCHIVE_EOF) return;
    if (r != ARCHIVE_OK) fail(disk, "reading " + name);
    while (done < offset) {
      size_t n = static_cast<size_t>(std::min<int64_t>(offset - done, zeros.size()));
      if (archive_write_data(out, zeros.data(), n) < 0) fail(out, "writing " + name);
      done += static_cast<int64_t>(n);
    }
    if (size > 0 && archive_write_data(out, buf, size) < 0) fail(out, "writing " + name);
    done = offset + static_cast<int64_t>(size);
  }
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
    if (archive_write_header(out.get(), e.get()) != ARCHIVE_OK) fail(out.get(), "writing " + entry);
    if (archive_entry_filetype(e.get()) == AE_IFREG && archive_entry_size(e.get()) > 0)
      copy_file_data(disk.get(), out.get(), entry);
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
