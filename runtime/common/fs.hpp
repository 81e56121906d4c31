// Small file-system helpers with errors that name the path.
#pragma once
#include <sys/types.h>

#include <optional>
#include <string>
#include <string_view>

namespace crx {

std::string read_file(const std::string& path);
// nullopt when the file cannot be opened (gone, no such process); read
// errors still throw. For the hot paths: a throw costs a static binary
// the unwinder's first-use FDE sort.
std::optional<std::string> read_file_if_present(const std::string& path);
// Writes (truncating) or throws Error naming the path.
void write_file(const std::string& path, std::string_view data, mode_t mode = 0644);
// Writes to a temporary file in the same directory, fsyncs, renames over path.
void write_file_atomic(const std::string& path, std::string_view data, mode_t mode = 0600);
// mkdir -p: each directory it makes gets mode exactly (chmod after the
// umask); existing directories are fine and keep theirs. A part of the
// path that exists but is no directory is ENOTDIR.
void mkdir_p(const std::string& path, mode_t mode = 0755);
bool path_exists(const std::string& path);
// rm -rf for a state directory; a missing path is fine. It never enters
// another mount (by statx's mount id, so a bind mount of the same file
// system counts too): meeting one throws Cause::Busy (EBUSY) naming it,
// with what was removed before gone. Callers detach their mounts first.
void remove_tree(const std::string& path);
// The directory of the running executable (/proc/self/exe), "" if unknown:
// where crx finds what is installed beside it.
std::string executable_directory();

}  // namespace crx
