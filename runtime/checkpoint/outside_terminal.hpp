// Whether a container's stdio is a terminal from outside its mount
// namespace: what Debian's CRIU 3.17.1 cannot dump (it looks a pty up as a
// file on one of the container's mounts), with or without --shell-job.
#pragma once
#include <sys/stat.h>
#include <sys/types.h>

namespace crx::checkpoint {

// A Unix98 pty slave (/dev/pts/N: character device, majors 136..143).
bool is_pty_slave(const struct stat& st);
// True when fd 0, 1 or 2 of pid is a pty slave of another devpts instance
// than the one at the process's /dev/pts (or it has none there).
bool stdio_is_outside_terminal(pid_t pid);

}  // namespace crx::checkpoint
