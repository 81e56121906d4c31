// Errors that travel up to the CLI, which prints them as one line.
#pragma once
#include <stdexcept>
#include <string>
#include <string_view>

namespace crx {

// What kind of failure an Error is, for callers that must tell them apart
// (a missing container from an unreadable one, a refused key from a broken
// link). Derived from the errno of a failed system call, or set where crx
// itself decides; Other when nothing more is known.
enum class Cause : int {
  Other = 0,
  NotFound,     // ENOENT, ESRCH, ENXIO, ENODEV: the thing (file, process) is not there
  Exists,       // EEXIST, ENOTEMPTY
  Busy,         // EBUSY, EAGAIN, ETXTBSY
  Invalid,      // EINVAL, ENOTDIR, EISDIR, ...: the request or its input is wrong
  Permission,   // EPERM, EACCES, EROFS; a refused migration key
  IO,           // EIO, ENOSPC, EPIPE, ECONNRESET, ...: the medium or link failed
  Unsupported,  // ENOSYS, EOPNOTSUPP: this kernel or tool cannot do it
  TimedOut,     // ETIMEDOUT
  Peer,         // the other side (a migration peer) answered with an error
};

// The Cause of an errno value (Other for 0 and for values not listed above).
Cause cause_of_errno(int err);
// "not found", "exists", ...: for logs and test output.
const char* cause_name(Cause c);

// Every failure the user should see is a crx::Error whose what() is a
// complete, single-line sentence with context ("mount proc on /proc: EPERM").
// It keeps its cause besides the text: the errno of a failed system call
// (sys_errno(), 0 when the failure was not a system call's) and a Cause
// (derived from that errno unless given). Callers decide on these, never
// on the text.
class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
  Error(const std::string& what, int sys_errno)
      : std::runtime_error(what), errno_(sys_errno), cause_(cause_of_errno(sys_errno)) {}
  Error(const std::string& what, Cause cause, int sys_errno = 0)
      : std::runtime_error(what), errno_(sys_errno), cause_(cause) {}
  int sys_errno() const { return errno_; }
  Cause cause() const { return cause_; }

 private:
  int errno_ = 0;
  Cause cause_ = Cause::Other;
};

// Throws Error("<what>: <strerror(errno)>") for the current errno.
[[noreturn]] void throw_errno(std::string_view what);
// Same with an explicit errno value.
[[noreturn]] void throw_errno(std::string_view what, int err);

}  // namespace crx
