// checkpoint/uts_ipc_anew.hpp against the host kernel's real namespaces:
// what a UTS and an IPC namespace hold is read from inside them, an IPC
// namespace with a SysV object of any kind is left to CRIU, and the new
// pair made from what was read holds the same.
#include "checkpoint/uts_ipc_anew.hpp"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <thread>

#include "common/error.hpp"
#include "common/fs.hpp"
#include "common/unique_fd.hpp"
#include "harness.hpp"

namespace crx::test {
namespace {

using checkpoint::fresh_ipc_sysctls;
using checkpoint::IpcSysctls;
using checkpoint::read_uts_ipc;
using checkpoint::UtsIpcContent;

// A process in a UTS and an IPC namespace of its own, configured by a
// shell command run in them.
struct UtsIpcChild {
  pid_t pid = -1;
  explicit UtsIpcChild(const std::string& command)
      : pid(fork_into_new_namespaces(CLONE_NEWUTS | CLONE_NEWIPC)) {
    Result r =
        run_sh("nsenter -t " + std::to_string(pid) + " -u -i sh -c " + shell_quoted(command));
    if (r.status != 0) {
      end();  // no destructor runs for a throwing constructor
      throw Error(command + ": " + r.err, Cause::Other);
    }
  }
  ~UtsIpcChild() { end(); }
  void end() {
    if (pid <= 0) return;
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
    pid = -1;
  }
  UniqueFd ns(const char* type) const {
    std::string path = "/proc/" + std::to_string(pid) + "/ns/" + type;
    UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd) throw_errno(path);
    return fd;
  }
  std::optional<UtsIpcContent> read(const IpcSysctls& fresh, std::string* why = nullptr) const {
    return read_uts_ipc(ns("uts").get(), ns("ipc").get(), fresh, why);
  }
};

// What a thread that joins the two namespaces sees.
UtsIpcContent seen_in(int uts, int ipc, const IpcSysctls& names) {
  UtsIpcContent c;
  std::thread([&] {
    if (::setns(uts, CLONE_NEWUTS) != 0 || ::setns(ipc, CLONE_NEWIPC) != 0) return;
    char host[256] = {}, domain[256] = {};
    ::gethostname(host, sizeof host - 1);
    ::getdomainname(domain, sizeof domain - 1);
    c.hostname = host;
    c.domainname = domain;
    for (const auto& [path, value] : names) {
      std::string text = read_file("/proc/sys/" + path);
      while (!text.empty() && text.back() == '\n') text.pop_back();
      c.ipc_sysctls[path] = text;
    }
  }).join();
  return c;
}

TEST(UtsIpcAnew, NewNamespacesAreAlikeAndDifferOnlyInWhatWasChanged) {
  CRX_REQUIRE_ROOT();
  const IpcSysctls fresh = fresh_ipc_sysctls();
  ASSERT_EQ(fresh.count("kernel/shmmax"), 1u);
  ASSERT_EQ(fresh.count("fs/mqueue/msg_max"), 1u);
  EXPECT_EQ(fresh_ipc_sysctls(), fresh);
  {
    UtsIpcChild untouched("true");
    auto c = untouched.read(fresh);
    ASSERT_TRUE(c.has_value());
    EXPECT_TRUE(c->ipc_sysctls.empty());
  }
  UtsIpcChild child(
      "hostname crx-moved && domainname crx-domain && echo 12345678 > /proc/sys/kernel/shmmax && "
      "echo 20 > /proc/sys/fs/mqueue/msg_max && echo '250 32000 64 200' > /proc/sys/kernel/sem");
  auto c = child.read(fresh);
  ASSERT_TRUE(c.has_value());
  EXPECT_EQ(c->hostname, "crx-moved");
  EXPECT_EQ(c->domainname, "crx-domain");
  const IpcSysctls want = {{"fs/mqueue/msg_max", "20"},
                           {"kernel/sem", "250\t32000\t64\t200"},
                           {"kernel/shmmax", "12345678"}};
  EXPECT_EQ(c->ipc_sysctls, want);
}

// A SysV object of each kind keeps the IPC namespace in CRIU's dump.
TEST(UtsIpcAnew, AnIpcNamespaceWithASysvObjectIsLeftToCriu) {
  CRX_REQUIRE_ROOT();
  const IpcSysctls fresh = fresh_ipc_sysctls();
  const std::pair<const char*, const char*> kinds[] = {
      {"ipcmk --shmem 4096", "shm"}, {"ipcmk --semaphore 1", "sem"}, {"ipcmk --queue", "msg"}};
  for (const auto& [command, kind] : kinds) {
    UtsIpcChild child(std::string(command) + " >/dev/null");
    std::string why;
    EXPECT_EQ(child.read(fresh, &why), std::nullopt) << command;
    EXPECT_EQ(why, std::string("it holds SysV ") + kind + " objects");
  }
}

TEST(UtsIpcAnew, TheNewPairHoldsWhatWasRead) {
  CRX_REQUIRE_ROOT();
  UtsIpcContent c;
  c.hostname = "crx-restored";
  c.domainname = "crx-domain";
  c.ipc_sysctls = {{"kernel/msgmax", "4096"}, {"fs/mqueue/queues_max", "100"}};
  checkpoint::NewUtsIpc made = checkpoint::new_uts_ipc(c);
  ASSERT_TRUE(made.uts);
  ASSERT_TRUE(made.ipc);
  UtsIpcContent seen = seen_in(made.uts.get(), made.ipc.get(), c.ipc_sysctls);
  EXPECT_EQ(seen.hostname, c.hostname);
  EXPECT_EQ(seen.domainname, c.domainname);
  EXPECT_EQ(seen.ipc_sysctls, c.ipc_sysctls);
  // Not ours: the host's names and sysctls are untouched.
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  EXPECT_NE(std::string(host), c.hostname);
  EXPECT_NE(read_file("/proc/sys/kernel/msgmax"), "4096\n");
}

// Only IPC sysctls: a path from the images naming anything else under
// /proc/sys is refused, and nothing is made.
TEST(UtsIpcAnew, ASysctlOutsideTheIpcNamespaceIsRefused) {
  CRX_REQUIRE_ROOT();
  for (const char* path : {"kernel/hostname", "net/ipv4/ip_forward", "kernel/../kernel/shmmax"}) {
    UtsIpcContent c;
    c.hostname = "x";
    c.ipc_sysctls = {{path, "1"}};
    try {
      checkpoint::new_uts_ipc(c);
      ADD_FAILURE() << path << " was written";
    } catch (const Error& e) {
      EXPECT_EQ(e.cause(), Cause::Invalid) << e.what();
      EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    }
  }
}

}  // namespace
}  // namespace crx::test
