// The regular files a container's tasks map or hold open: the files CRIU's
// dump stores validation data for (criu/files-reg.c, a size and, by
// default, an ELF build-id), which its restore opens again by path.
#pragma once
#include <sys/types.h>

#include <compare>
#include <string>
#include <vector>

namespace crx::checkpoint {

struct FileId {
  dev_t dev = 0;
  ino_t ino = 0;
  auto operator<=>(const FileId&) const = default;
};

struct TaskFile {
  FileId id;
  off_t size = 0;
  // The path as the task sees it (in its mount namespace: what
  // /proc/<pid>/maps shows when read from the host).
  std::string path;
  // Unlinked: CRIU carries its contents (a ghost file, memfd, shmem), the
  // destination needs no copy of its own.
  bool deleted = false;
  // Opens this file from here: /proc/<pid>/map_files/<range> or
  // /proc/<pid>/fd/<n>.
  std::string proc_link;
};

struct TaskFileScan {
  std::vector<TaskFile> files;
  // Mappings of a file, and open fds, whose file could not be looked at
  // (unmapped or closed meanwhile, or no right to): the list may lack
  // them.
  size_t unreadable = 0;
};

// The regular files the tasks map (/proc/<pid>/maps) or hold open
// (/proc/<pid>/fd), one entry per file (device and inode), in the order
// first seen. A task that is gone is left out.
TaskFileScan task_files(const std::vector<pid_t>& pids);

// One line of /proc/<pid>/maps: the mapped file's path ("" for anonymous
// memory and for [heap], [stack], ...), its maps device and inode, and the
// address range as map_files names it ("400000-401000": no leading zeros,
// which the kernel refuses there). false: not a mapping line.
struct MapsLine {
  std::string range;
  std::string dev;  // "fe:01"
  unsigned long inode = 0;
  std::string path;
  bool deleted = false;
};
bool parse_maps_line(const std::string& line, MapsLine& out);

}  // namespace crx::checkpoint
