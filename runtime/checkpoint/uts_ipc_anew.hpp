// A container's UTS and IPC namespaces made anew at the destination of a
// migration, with what they held carried by crx, instead of dumped by CRIU.
//
// CRIU dumps every namespace of the tasks that is not its own in a child it
// forks for that namespace (criu/namespaces.c, dump_namespaces): for a
// container, one for its UTS and one for its IPC namespace, 25-30 ms of an
// idle guest's dump and 60-100 ms of one under a move's load, all in the
// frozen window. What they hold is little: two names, the IPC sysctls and
// the SysV objects. When the IPC namespace holds no SysV object, crx reads
// the names and the sysctls that differ from a new namespace's, CRIU dumps
// from inside both namespaces (so they are its own, and left out of the
// images, as a network namespace that moves empty: fresh_netns.hpp), and
// the restore makes new ones with those names and sysctls for CRIU to join
// (README.md, "UTS and IPC namespaces made anew"). POSIX message queues are
// in neither: CRIU 3.17 does not dump them.
#pragma once

#include <sys/types.h>

#include <map>
#include <optional>
#include <string>

#include "common/unique_fd.hpp"

namespace crx::checkpoint {

// Paths under /proc/sys ("kernel/shmmax") with their values as read (no
// trailing newline).
using IpcSysctls = std::map<std::string, std::string>;

// What a UTS and an IPC namespace without SysV objects hold that a new pair
// does not: the names, and the IPC sysctls whose value differs.
struct UtsIpcContent {
  std::string hostname;
  std::string domainname;
  IpcSysctls ipc_sysctls;
};

// The IPC sysctls of a new IPC namespace (made for the purpose by a thread
// and gone after). Throws Error with the errno of what failed.
IpcSysctls fresh_ipc_sysctls();

// Read at the freeze from inside the two namespaces (a thread that joins
// them; no fork). nullopt when the IPC namespace holds a SysV object (*why
// says which kind): CRIU must dump it. fresh: fresh_ipc_sysctls() of this
// host. Throws Error with the errno of what failed.
std::optional<UtsIpcContent> read_uts_ipc(int uts_fd, int ipc_fd, const IpcSysctls& fresh,
                                          std::string* why);

// A new UTS and a new IPC namespace holding c, each held only by its fd.
// Throws Error naming what could not be set, with its errno.
struct NewUtsIpc {
  UniqueFd uts;
  UniqueFd ipc;
};
NewUtsIpc new_uts_ipc(const UtsIpcContent& c);

}  // namespace crx::checkpoint
