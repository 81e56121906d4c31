// Errors that travel up to the CLI, which prints them as one line.
#pragma once
#include <stdexcept>
#include <string>
#include <string_view>

namespace crx {

// Every failure the user should see is a crx::Error whose what() is a
// complete, single-line sentence with context ("mount proc on /proc: EPERM").
// An Error from a failed system call keeps its errno (sys_errno(), 0 when
// the failure was not a system call's): callers decide on it, not on text.
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
  Error(const std::string& what, int sys_errno) : std::runtime_error(what), errno_(sys_errno) {}
  int sys_errno() const { return errno_; }

 private:
  int errno_ = 0;
};

// Throws Error("<what>: <strerror(errno)>") for the current errno.
[[noreturn]] void throw_errno(std::string_view what);
// Same with an explicit errno value.
[[noreturn]] void throw_errno(std::string_view what, int err);

}  // namespace crx
