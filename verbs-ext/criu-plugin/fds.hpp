// Small file and fd helpers of the plugin: what a file descriptor is,
// the plugin's files in CRIU's images dir, timing.
#pragma once
#include <infiniband/verbs.h>
#include <sys/stat.h>

#include <cstdint>
#include <string>
#include <vector>

namespace crx::verbs_plugin {

inline constexpr unsigned kUverbsMajor = 231;  // /dev/infiniband/uverbsN
inline constexpr unsigned kUverbsMinorBase = 192;

bool is_uverbs(const struct stat& st);
// An anon_inode:[infinibandevent] fd (async event fd or completion channel)
bool is_event_file(int fd);
// The path an fd of this process points to ("" if unknown).
std::string fd_path(int fd);
// The ibv device name behind a uverbs char device ("" if unknown).
std::string ibdev_of(const struct stat& st);

// Moves fd to a number above every fd open in this task, out of the way
// of the numbers CRIU places the restored process's fds at (it refuses
// one that is taken) and of its service fds; closes the old one. The new
// fd, or -errno (fd is closed either way).
int move_high(int fd);

// Files in CRIU's images dir (criu_get_image_dir()). 0 or -errno.
int read_image_file(const std::string& name, std::vector<uint8_t>* out);
int write_image_file(const std::string& name, const void* data, size_t len);
bool image_file_exists(const std::string& name);

double now_ms();

// A zeroed ibv_context around an fd of a uverbs file: all that the
// checkpointer calls of libverbs-ext use (they only read cmd_fd).
struct FdContext {
  struct ibv_context ctx {};
  explicit FdContext(int fd) { ctx.cmd_fd = fd; }
};

// One snapshot of the context behind fd (ibv_dump_context_alloc; flags as
// ibv_dump_context_flags) into *out, *count its records. 0 or -errno.
int dump_context_of(int fd, unsigned flags, std::vector<uint8_t>* out, int* count = nullptr);

}  // namespace crx::verbs_plugin
