// --preserve-fds and socket activation (LISTEN_FDS), as runc does them:
//   * If crx itself was socket-activated (LISTEN_FDS=L and LISTEN_PID equal
//     to crx's pid), fds 3..3+L-1 go to the container and the container's
//     env gets LISTEN_FDS=L and LISTEN_PID=1.
//   * --preserve-fds N passes the next N fds, 3+L..3+L+N-1, unchanged.
// The container therefore receives fds 3..3+passed_fd_count()-1 at the same
// numbers. Everything else above 2 is made close-on-exec in the child, so
// crx's own sync pipes keep working until execve and never leak.
// Calls:
//   parent, first thing after parsing flags (before opening anything):
//     int passed = passed_fd_count(preserve_fds);
//     check_passed_fds_open(passed);
//     add_listen_fds_env(spec.process.env, listen_fd_count());
//   container child, right before execve:
//     prepare_preserved_fds(passed);
#pragma once
#include <string>
#include <vector>

namespace crx::linux_ {

// LISTEN_FDS of crx's own environment when LISTEN_PID names crx; else 0.
int listen_fd_count();
// listen_fd_count() + preserve_fds.
int passed_fd_count(int preserve_fds);
// Throws crx::Error naming the first fd in 3..3+count-1 that is not open.
void check_passed_fds_open(int count);
// Sets LISTEN_FDS=<count> and LISTEN_PID=1 in env (replacing existing
// entries) when count > 0; leaves env alone otherwise.
void add_listen_fds_env(std::vector<std::string>& env, int count);
// Clears FD_CLOEXEC on 3..3+count-1 and sets it on every fd above.
void prepare_preserved_fds(int count);

}  // namespace crx::linux_
