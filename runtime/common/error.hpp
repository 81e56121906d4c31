// Errors that travel up to the CLI, which prints them as one line.
#pragma once
#include <stdexcept>
#include <string>
#include <string_view>

namespace crx {

// Every failure the user should see is a crx::Error whose what() is a
// complete, single-line sentence with context ("mount proc on /proc: EPERM").
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Throws Error("<what>: <strerror(errno)>") for the current errno.
[[noreturn]] void throw_errno(std::string_view what);
// Same with an explicit errno value.
[[noreturn]] void throw_errno(std::string_view what, int err);

}  // namespace crx
