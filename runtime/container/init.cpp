#include "container/init.hpp"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "common/error.hpp"
#include "container/process_setup.hpp"
#include "linux/console.hpp"
#include "container/hooks_runner.hpp"
#include "linux/namespaces.hpp"
#include "linux/rootfs.hpp"
#include "linux/fds.hpp"
#include "linux/process_security.hpp"
#include "linux/sysctl.hpp"

namespace crx::container {

std::string find_executable(const std::string& name, const std::vector<std::string>& env) {
  auto executable = [](const std::string& p) {
    struct stat st;
    return ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(p.c_str(), X_OK) == 0;
  };
  if (name.find('/') != std::string::npos) {
    if (!executable(name)) {
      throw Error("exec: \"" + name + "\": stat " + name + ": no such executable file",
                  Cause::NotFound);
    }
    return name;
  }
  std::string path = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
  for (const auto& e : env)
    if (e.rfind("PATH=", 0) == 0) path = e.substr(5);
  size_t i = 0;
  while (i <= path.size()) {
    size_t j = path.find(':', i);
    if (j == std::string::npos) j = path.size();
    std::string dir = path.substr(i, j - i);
    if (dir.empty()) dir = ".";
    std::string cand = dir + "/" + name;
    if (executable(cand)) return cand;
    i = j + 1;
  }
  throw Error("exec: \"" + name + "\": executable file not found in $PATH");
}

namespace {

void set_hostnames(const spec::Spec& spec) {
  if (!spec.hostname.empty() && ::sethostname(spec.hostname.c_str(), spec.hostname.size()) != 0)
    throw_errno("sethostname " + spec.hostname);
  if (!spec.domainname.empty() && ::setdomainname(spec.domainname.c_str(), spec.domainname.size()) != 0)
    throw_errno("setdomainname " + spec.domainname);
}

// Blocks until `crx start` opens exec.fifo for reading.
void wait_for_start(int fifo_fd) {
  std::string path = "/proc/self/fd/" + std::to_string(fifo_fd);
  int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) throw_errno("open exec fifo");
  char zero = '0';
  (void)!::write(fd, &zero, 1);
  ::close(fd);
  ::close(fifo_fd);
}

std::vector<char*> c_strings(const std::vector<std::string>& v) {
  std::vector<char*> out;
  for (const auto& s : v) out.push_back(const_cast<char*>(s.c_str()));
  out.push_back(nullptr);
  return out;
}

void run_init(const InitContext& ctx, SyncChannel& sync) {
  const spec::Spec& spec = *ctx.spec;
  sigset_t none;  // crx run blocks signals in the parent; the container must not inherit that
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);

  sync.expect(SyncType::Continue);  // id maps written
  // Everything that needs the cgroup comes after enter_cgroup(): a fork
  // (pids limit, the child inherits it), the cgroup namespace (rooted at our
  // cgroup), cgroup mounts and mknod (see rootfs::Options::enter_cgroup).
  // Joining it ourselves is quick, so it is done first; when the parent
  // attaches us we do our mounts meanwhile and wait only when needed.
  bool in_cgroup = false;
  auto enter_cgroup = [&] {
    if (in_cgroup) return;
    if (ctx.join_cgroup_v1) {
      ctx.join_cgroup_v1->join_v1_as_single_thread();
    } else {
      sync.expect(SyncType::CgroupJoined);
    }
    if (ctx.new_cgroupns && ::unshare(CLONE_NEWCGROUP) != 0) throw_errno("unshare cgroup namespace");
    in_cgroup = true;
  };
  if (ctx.join_cgroup_v1) enter_cgroup();
  if (ctx.new_userns) become_root_in_userns();
  linux_ns::join_namespaces(spec.linux);
  if (linux_ns::joins_pid_namespace(spec.linux)) {
    enter_cgroup();
    fork_into_pid_namespace(sync);
  }
  if (::setsid() < 0 && errno != EPERM) throw_errno("setsid");
  if (::prctl(PR_SET_PDEATHSIG, 0) != 0) throw_errno("prctl PDEATHSIG");

  set_hostnames(spec);
  rootfs::Options ro{ctx.rootfs, ctx.bundle, ctx.no_pivot, ctx.new_userns, ctx.new_cgroupns, enter_cgroup};
  ro.mount_namespace = spec.linux.find_namespace("mount") != nullptr;
  rootfs::prepare_rootfs(spec, ro);
  enter_cgroup();

  if (spec.hooks.has_runtime_create_hooks()) {
    sync.send(SyncType::RunRuntimeHooks);
    sync.expect(SyncType::HooksDone);
  }
  run_hooks_or_throw(spec.hooks.create_container, "createContainer", ctx.state_json);

  rootfs::enter_rootfs(ro);
  if (spec.process.terminal) attach_console(ctx.console_fd, spec.process);
  // before finish_rootfs: /proc/sys is usually made read-only there
  linux_::apply_sysctls(spec.linux.sysctl);
  // As runc: without a mount namespace nothing is remounted (a read-only
  // root would be the caller's "/"); masked and read-only paths are refused
  // at parse time then.
  if (ro.mount_namespace) rootfs::finish_rootfs(spec);

  std::string exe = find_executable(spec.process.args.at(0), spec.process.env);
  if (::chdir(spec.process.cwd.c_str()) != 0)
    throw_errno("chdir to cwd (\"" + spec.process.cwd + "\") set in config.json failed");

  sync.send(SyncType::Created);
  sync.close();
  wait_for_start(ctx.fifo_fd);
  run_hooks_or_throw(spec.hooks.start_container, "startContainer", ctx.state_json);

  linux_::prepare_preserved_fds(ctx.preserve_fds);
  UniqueFd notify = linux_::finalize_process(spec.process, ctx.seccomp->empty() ? nullptr : ctx.seccomp);
  if (notify) linux_::send_seccomp_listener_fd(spec.linux.seccomp->listener_path, notify.get(), 1,
                                               spec.linux.seccomp->listener_metadata,
                                               nlohmann::json::parse(ctx.state_json));
  auto argv = c_strings(spec.process.args);
  auto envp = c_strings(spec.process.env);
  ::execve(exe.c_str(), argv.data(), envp.data());
  throw_errno("exec " + exe);
}

}  // namespace

void container_init(const InitContext& ctx) {
  SyncChannel sync{UniqueFd(ctx.sync_fd)};
  try {
    run_init(ctx, sync);
  } catch (const std::exception& e) {
    bool reported = false;
    try {
      if (sync.fd() >= 0) {
        sync.send_error(e);
        reported = true;
      }
    } catch (...) {
    }
    // after Created nobody listens on the channel: say it on stderr as runc does
    if (!reported) {
      std::string line = std::string("crx init: ") + e.what() + "\n";
      (void)!::write(2, line.data(), line.size());
    }
  }
  ::_exit(127);
}

}  // namespace crx::container
