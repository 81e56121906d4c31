// Steps of the container init that glue namespaces, console and process
// attributes together (see init.cpp for the order).
#pragma once
#include "container/sync.hpp"
#include "linux/seccomp.hpp"
#include "spec/spec.hpp"

namespace crx::container {

// In a fresh user namespace: become uid/gid 0 there (the maps are written).
void become_root_in_userns();
// After setns() into a pid namespace only children land in it: fork, tell
// the parent the new init's pid, and let the intermediate process exit.
void fork_into_pid_namespace(const SyncChannel& sync);
// Opens a pty from the container's devpts, sends the master over console_fd,
// makes the slave the controlling terminal and stdio.
void attach_console(int console_fd, const spec::Process& process);

}  // namespace crx::container
