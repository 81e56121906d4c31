// The child processes of runtime/common/child_process.hpp under the names
// runtime/migrate still uses (checkpoint::spawn with positional options).
// New code includes common/child_process.hpp; this header goes once
// runtime/migrate does too.
#pragma once
#include <string>
#include <vector>

#include "common/child_process.hpp"

namespace crx::checkpoint {

using crx::ChildProcess;
using crx::describe_wait_status;

inline ChildProcess spawn(const std::vector<std::string>& argv, const std::vector<int>& keep_fds,
                          bool quiet = false, int stdin_fd = -1, int stdout_fd = -1,
                          int stderr_fd = -1, const std::vector<std::string>* env = nullptr,
                          bool die_with_parent = false) {
  return crx::spawn(argv, {.env = env, .keep_fds = keep_fds, .quiet = quiet, .stdin_fd = stdin_fd,
                           .stdout_fd = stdout_fd, .stderr_fd = stderr_fd,
                           .die_with_parent = die_with_parent});
}

}  // namespace crx::checkpoint
