// OOM-kill events: a counter the kernel keeps (memory.events oom_kill on v2,
// memory.oom_control oom_kill on v1) plus an fd that wakes up a poll loop.
#include <fcntl.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <cerrno>

#include "common/error.hpp"
#include "common/retry_eintr.hpp"
#include "cgroup/cgroup.hpp"
#include "cgroup/fs.hpp"

namespace crx::cgroup {

namespace {

uint64_t read_counter(const std::string& file) {
  auto slash = file.find_last_of('/');
  return fs::read_flat_keyed(file.substr(0, slash), file.substr(slash + 1))["oom_kill"];
}

}  // namespace

uint64_t Cgroup::oom_kill_count() const {
  std::string dir = path_for("memory");
  if (dir.empty()) return 0;
  return read_counter(dir + (layout_ == Layout::V2 ? "/memory.events" : "/memory.oom_control"));
}

OomEvents Cgroup::oom_events() const {
  std::string dir = path_for("memory");
  if (dir.empty()) throw Error("cgroup: no memory controller: OOM events are not available");
  OomEvents ev;
  if (layout_ == Layout::V2) {
    ev.counter_file_ = dir + "/memory.events";
    ev.fd_ = UniqueFd(::inotify_init1(IN_CLOEXEC | IN_NONBLOCK));
    if (!ev.fd_) throw_errno("cgroup: inotify_init1");
    if (::inotify_add_watch(ev.fd_.get(), ev.counter_file_.c_str(), IN_MODIFY) < 0)
      throw_errno("cgroup: watch " + ev.counter_file_);
  } else {
    ev.counter_file_ = dir + "/memory.oom_control";
    ev.is_eventfd_ = true;
    ev.fd_ = UniqueFd(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
    if (!ev.fd_) throw_errno("cgroup: eventfd");
    ev.watched_ = UniqueFd(::open(ev.counter_file_.c_str(), O_RDONLY | O_CLOEXEC));
    if (!ev.watched_) throw_errno("cgroup: open " + ev.counter_file_);
    fs::write(dir, "cgroup.event_control",
              std::to_string(ev.fd_.get()) + " " + std::to_string(ev.watched_.get()));
  }
  ev.last_ = read_counter(ev.counter_file_);
  return ev;
}

uint64_t OomEvents::consume() {
  char buf[4096];
  for (;;) {  // drain the wake-ups (eventfd counter or inotify records)
    ssize_t n = retry_eintr([&] { return ::read(fd_.get(), buf, sizeof buf); });
    if (n > 0 && !is_eventfd_) continue;
    break;
  }
  uint64_t now = 0;
  try {
    now = read_counter(counter_file_);
  } catch (const Error&) {
    return 0;  // the cgroup is gone
  }
  uint64_t delta = now > last_ ? now - last_ : 0;
  last_ = now;
  return delta;
}

}  // namespace crx::cgroup
