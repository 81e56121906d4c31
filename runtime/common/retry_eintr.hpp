// Calls a system call again while a signal interrupts it.
#pragma once
#include <cerrno>
#include <utility>

namespace crx {

// Calls f() until it does not fail with EINTR, and returns its result: for
// calls that return a negative value and set errno when they fail
// (read, write, waitpid, flock, ...). errno is left as f() set it.
//   ssize_t n = retry_eintr([&] { return ::read(fd, buf, sizeof buf); });
template <class F>
auto retry_eintr(F&& f) -> decltype(f()) {
  for (;;) {
    auto r = f();
    if (r >= 0 || errno != EINTR) return r;
  }
}

}  // namespace crx
