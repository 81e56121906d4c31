#include "checkpoint/uts_ipc_anew.hpp"

#include <fcntl.h>
#include <sched.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <exception>
#include <functional>
#include <string_view>
#include <thread>

#include "common/error.hpp"
#include "common/fs.hpp"
#include "common/retry_eintr.hpp"

namespace crx::checkpoint {
namespace {

// Every sysctl of an IPC namespace (ipc/ipc_sysctl.c, ipc/mq_sysctl.c of
// 6.1) but kernel/auto_msgmni, which reads 0 and ignores what it is given.
// The *_next_id ones exist with CONFIG_CHECKPOINT_RESTORE only.
constexpr std::array<std::string_view, 16> kIpcSysctls = {
    "kernel/msgmax",     "kernel/msgmnb",       "kernel/msgmni",
    "kernel/sem",        "kernel/shmall",       "kernel/shmmax",
    "kernel/shmmni",     "kernel/shm_rmid_forced", "kernel/msg_next_id",
    "kernel/sem_next_id", "kernel/shm_next_id", "fs/mqueue/msg_default",
    "fs/mqueue/msg_max", "fs/mqueue/msgsize_default", "fs/mqueue/msgsize_max",
    "fs/mqueue/queues_max",
};

// The SysV objects of the reader's IPC namespace, one table per kind: a
// header line, then a line per object.
constexpr std::array<std::string_view, 3> kSysvTables = {"shm", "sem", "msg"};

// Runs fn on a thread of its own that first joins the namespaces joined
// (fds of namespaces, of any type) or makes new ones (unshare_flags); the
// process's other threads stay where they are. Rethrows what fn throws.
void on_thread_in(std::initializer_list<int> joined, int unshare_flags,
                  const std::function<void()>& fn) {
  std::exception_ptr error;
  std::thread t([&] {
    try {
      for (int fd : joined)
        if (::setns(fd, 0) != 0) throw_errno("joining the container's UTS or IPC namespace");
      if (unshare_flags && ::unshare(unshare_flags) != 0)
        throw_errno("making new UTS and IPC namespaces");
      fn();
    } catch (...) {
      error = std::current_exception();
    }
  });
  t.join();
  if (error) std::rethrow_exception(error);
}

// A file's text without its trailing newline; nullopt when it cannot be
// opened (a sysctl this kernel lacks).
std::optional<std::string> read_text(const std::string& path) {
  std::optional<std::string> out = read_file_if_present(path);
  while (out && !out->empty() && out->back() == '\n') out->pop_back();
  return out;
}

// The IPC sysctls of the calling thread's namespace.
IpcSysctls ipc_sysctls_here() {
  IpcSysctls out;
  for (std::string_view name : kIpcSysctls) {
    std::string path(name);
    if (auto v = read_text("/proc/sys/" + path)) out[path] = *v;
  }
  return out;
}

}  // namespace

IpcSysctls fresh_ipc_sysctls() {
  IpcSysctls out;
  on_thread_in({}, CLONE_NEWIPC, [&] { out = ipc_sysctls_here(); });
  return out;
}

std::optional<UtsIpcContent> read_uts_ipc(int uts_fd, int ipc_fd, const IpcSysctls& fresh,
                                          std::string* why) {
  std::optional<UtsIpcContent> out;
  on_thread_in({uts_fd, ipc_fd}, 0, [&] {
    for (std::string_view kind : kSysvTables) {
      const std::string path = "/proc/sysvipc/" + std::string(kind);
      std::optional<std::string> table = read_text(path);
      if (!table) throw Error(path + " is missing (a kernel without SysV IPC?)", Cause::NotFound);
      if (table->find('\n') != std::string::npos) {
        if (why) *why = "it holds SysV " + std::string(kind) + " objects";
        return;
      }
    }
    struct utsname u{};
    if (::uname(&u) != 0) throw_errno("uname in the container's UTS namespace");
    UtsIpcContent c;
    c.hostname = u.nodename;
    c.domainname = u.domainname;
    for (auto& [path, value] : ipc_sysctls_here()) {
      auto f = fresh.find(path);
      if (f == fresh.end() || f->second != value) c.ipc_sysctls[path] = value;
    }
    out = std::move(c);
  });
  return out;
}

NewUtsIpc new_uts_ipc(const UtsIpcContent& c) {
  NewUtsIpc out;
  on_thread_in({}, CLONE_NEWUTS | CLONE_NEWIPC, [&] {
    if (::sethostname(c.hostname.data(), c.hostname.size()) != 0)
      throw_errno("setting the hostname \"" + c.hostname + "\" of the new UTS namespace");
    if (::setdomainname(c.domainname.data(), c.domainname.size()) != 0)
      throw_errno("setting the domain name \"" + c.domainname + "\" of the new UTS namespace");
    // Not structured bindings: clang before 16 does not let the write's
    // lambda capture them (the sanitizer build's compiler).
    for (const auto& sysctl : c.ipc_sysctls) {
      const std::string& path = sysctl.first;
      const std::string& value = sysctl.second;
      // Only the names above: a path from the images must not reach
      // anything else under /proc/sys.
      bool known = false;
      for (std::string_view name : kIpcSysctls) known = known || name == path;
      if (!known) throw Error("\"" + path + "\" is not an IPC sysctl", Cause::Invalid);
      const std::string file = "/proc/sys/" + path;
      UniqueFd fd(::open(file.c_str(), O_WRONLY | O_CLOEXEC));
      if (!fd || retry_eintr([&] { return ::write(fd.get(), value.data(), value.size()); }) < 0)
        throw_errno("setting " + path + " to \"" + value + "\" in the new IPC namespace");
    }
    out.uts.reset(::open("/proc/thread-self/ns/uts", O_RDONLY | O_CLOEXEC));
    if (!out.uts) throw_errno("opening the new UTS namespace (/proc/thread-self/ns/uts)");
    out.ipc.reset(::open("/proc/thread-self/ns/ipc", O_RDONLY | O_CLOEXEC));
    if (!out.ipc) throw_errno("opening the new IPC namespace (/proc/thread-self/ns/ipc)");
  });
  return out;
}

}  // namespace crx::checkpoint
