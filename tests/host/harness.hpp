// Test harness for the host integration tests: runs the real crx binary as
// root against a private --root, with busybox bundles built from Debian's
// busybox-static (bundles/busybox/make-rootfs.sh), one shared rootfs.
#pragma once
#include <gtest/gtest.h>
#include <sys/types.h>

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "../support/temp_dir.hpp"

namespace crx::test {

struct Result {
  int status = -1;  // exit status, or 128+signal
  std::string out;
  std::string err;
};

// Runs `crx --root <root> args...`; stdin_data is fed to stdin.
Result run_crx(const std::vector<std::string>& args, const std::string& stdin_data = "",
               const std::vector<int>& pass_fds = {});
// Runs /bin/sh -c script on the host.
Result run_sh(const std::string& script);

// The shared busybox rootfs (built once per test run).
const std::string& busybox_rootfs();
// The --root every test uses (a fresh temp dir per test binary).
const std::string& state_root();

// A bundle dir with a config.json made from `crx spec`, adjusted for tests:
// no terminal, root.path = the shared rootfs (read-only), args as given.
class Bundle {
 public:
  explicit Bundle(std::vector<std::string> args = {"true"});
  nlohmann::json& config() { return config_; }
  const std::string& dir() const { return dir_.path(); }
  void write() const;  // writes config.json (call after editing config())

 private:
  TempDir dir_{"crx-bundle"};
  nlohmann::json config_;
};

// A unique container id for this test.
std::string unique_id(const std::string& stem = "t");
// Checks nothing of container `id` is left: state dir, cgroup dirs, mounts.
void expect_nothing_left(const std::string& id);
// Deletes the container with --force, ignoring errors (test teardown).
void force_delete(const std::string& id);
// Host cgroup directories whose name is `id` (any hierarchy).
std::vector<std::string> cgroup_dirs_named(const std::string& id);
// Host cgroup directories (any hierarchy, any depth) whose name `wanted`
// accepts; the walk does not descend into them.
std::vector<std::string> cgroup_dirs_where(const std::function<bool(const std::string&)>& wanted);
std::string read_text(const std::string& path);
void write_text(const std::string& path, const std::string& text);
// `crx state id` parsed (a failure is a test failure).
nlohmann::json state_of(const std::string& id);
// True when pid no longer runs (gone, or a zombie not yet reaped).
bool process_gone(pid_t pid);
// A child that left this process's namespaces for new ones
// (unshare(clone_flags)) and waits there, until killed; its pid. Throws
// Error when it could not. The caller kills and reaps it.
pid_t fork_into_new_namespaces(int clone_flags);

// `crx ... args` with stdout on /dev/null and stdin closed, for commands that
// leave a process behind (run -d, exec -d); stderr comes back in err.
Result run_crx_detached(const std::vector<std::string>& args);
std::string shell_quoted(const std::string& s);
// The file of a container process' cgroup: v1 controller dir, or the v2
// dir when controller is "" on a pure cgroup v2 host.
std::string cgroup_file(int pid, const std::string& controller, const std::string& file);
// The container's init pid from `crx state`.
int init_pid(const std::string& id);

// A detached running container (default: sleep 1000), force-deleted and
// checked for leftovers at the end of the test.
struct Running {
  Bundle bundle;
  std::string id = unique_id();
  explicit Running(std::vector<std::string> args = {"sleep", "1000"},
                   const std::function<void(nlohmann::json&)>& edit = {});
  ~Running();
};

// A unix socket listening like containerd's console socket.
class ConsoleSocket {
 public:
  explicit ConsoleSocket(const std::string& path);
  ~ConsoleSocket();
  // Accepts one connection and returns the pty master sent over it
  // (-1 on failure); *name gets the message payload (the pty's name).
  int receive_master(std::string* name);

 private:
  int listener_ = -1;
};
// Reads the pty master until EOF (the slave side closed).
std::string read_all(int fd);

// Skips the test unless running as root.
#define CRX_REQUIRE_ROOT()                                   \
  do {                                                       \
    if (::geteuid() != 0) GTEST_SKIP() << "needs root";      \
  } while (0)

}  // namespace crx::test
