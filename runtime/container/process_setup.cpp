#include "container/process_setup.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include "common/error.hpp"
#include "linux/console.hpp"

namespace crx::container {

void become_root_in_userns() {
  if (::setresgid(0, 0, 0) != 0) throw_errno("setresgid 0 in the user namespace");
  if (::setresuid(0, 0, 0) != 0) throw_errno("setresuid 0 in the user namespace");
}

void fork_into_pid_namespace(const SyncChannel& sync) {
  pid_t pid = ::fork();
  if (pid < 0) throw_errno("fork into pid namespace");
  if (pid > 0) {
    sync.send(SyncType::InitPid, pid);
    ::_exit(0);
  }
}

void attach_console(int console_fd, const spec::Process& process) {
  if (console_fd < 0) throw Error("terminal requested but no console socket");
  std::string slave;
  UniqueFd master = linux_::open_pty(&slave, process.console_size);
  linux_::send_fd(console_fd, master.get(), slave, "console socket");
  master.reset();
  ::close(console_fd);
  linux_::use_console_as_stdio(slave);
}

}  // namespace crx::container
