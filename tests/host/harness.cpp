#include "harness.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <fstream>
#include <sstream>

#include "common/error.hpp"

namespace crx::test {

namespace {

Result run_argv(const std::vector<std::string>& argv, const std::string& stdin_data,
                const std::vector<int>& pass_fds) {
  int in[2], out[2], err[2];
  if (::pipe2(in, O_CLOEXEC) || ::pipe2(out, O_CLOEXEC) || ::pipe2(err, O_CLOEXEC)) std::abort();
  pid_t pid = ::fork();
  if (pid == 0) {
    ::dup2(in[0], 0);
    ::dup2(out[1], 1);
    ::dup2(err[1], 2);
    for (int fd : pass_fds) ::fcntl(fd, F_SETFD, 0);
    std::vector<char*> args;
    for (auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  ::close(in[0]);
  ::close(out[1]);
  ::close(err[1]);
  (void)!::write(in[1], stdin_data.data(), stdin_data.size());
  ::close(in[1]);
  // Read until crx exits, then drain what is buffered: a detached container
  // inherits crx's stdout/stderr and may keep the pipes open for ever.
  Result r;
  ::fcntl(out[0], F_SETFL, O_NONBLOCK);
  ::fcntl(err[0], F_SETFL, O_NONBLOCK);
  auto drain = [&](int fd, std::string& into) {
    char buf[4096];
    for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) into.append(buf, static_cast<size_t>(n));
  };
  int status = 0;
  for (;;) {
    pollfd fds[2] = {{out[0], POLLIN, 0}, {err[0], POLLIN, 0}};
    ::poll(fds, 2, 20);
    drain(out[0], r.out);
    drain(err[0], r.err);
    if (::waitpid(pid, &status, WNOHANG) == pid) break;
  }
  drain(out[0], r.out);
  drain(err[0], r.err);
  ::close(out[0]);
  ::close(err[0]);
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return r;
}

}  // namespace

Result run_crx(const std::vector<std::string>& args, const std::string& stdin_data,
               const std::vector<int>& pass_fds) {
  std::vector<std::string> argv{CRX_BINARY, "--root", state_root()};
  argv.insert(argv.end(), args.begin(), args.end());
  return run_argv(argv, stdin_data, pass_fds);
}

Result run_sh(const std::string& script) { return run_argv({"/bin/sh", "-c", script}, "", {}); }

// The directories below live as long as the test process. The path lives
// in the object that removes it: an atexit() handler registered while a
// function's static string is initialised runs after that string's
// destructor (handlers run in reverse order of registration) and read the
// freed string (ASan: heap-use-after-free at exit).
const std::string& busybox_rootfs() {
  static const TempDir dir([] {
    TempDir d("crx-rootfs");
    ::chmod(d.path().c_str(), 0755);  // reachable by a container root mapped to another uid
    auto r = run_sh(std::string(CRX_SOURCE_DIR) + "/bundles/busybox/make-rootfs.sh " + d.path());
    if (r.status != 0) {
      std::fprintf(stderr, "make-rootfs failed: %s\n", r.err.c_str());
      std::abort();
    }
    return d;
  }());
  return dir.path();
}

const std::string& state_root() {
  static const TempDir dir("crx-state");
  return dir.path();
}

std::string read_text(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

void write_text(const std::string& path, const std::string& text) {
  std::ofstream f(path);
  f << text;
}

Bundle::Bundle(std::vector<std::string> args) {
  auto r = run_crx({"spec", "--bundle", dir()});
  if (r.status != 0) {
    std::fprintf(stderr, "crx spec failed: %s\n", r.err.c_str());
    std::abort();
  }
  config_ = nlohmann::json::parse(read_text(dir_ / "config.json"));
  config_["root"]["path"] = busybox_rootfs();
  config_["root"]["readonly"] = true;
  config_["process"]["terminal"] = false;
  config_["process"]["args"] = args;
  write();
}

void Bundle::write() const { write_text(dir_ / "config.json", config_.dump(2)); }

std::string unique_id(const std::string& stem) {
  static int counter = 0;
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string name = info ? info->name() : stem;
  return stem + "-" + name.substr(0, 40) + "-" + std::to_string(::getpid()) + "-" + std::to_string(++counter);
}

namespace {

// A directory that goes away while it is read (other processes' cgroups
// come and go, e.g. a supervisor's per-command memory cgroups) ends only
// its own part of the walk: stopping the whole walk at the first error
// would let a leftover in a later hierarchy go unseen.
void collect_cgroup_dirs(const std::filesystem::path& dir, const std::function<bool(const std::string&)>& wanted,
                         std::vector<std::string>& out) {
  std::error_code ec;
  for (std::filesystem::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code ec2;
    if (!it->is_directory(ec2) || it->is_symlink(ec2)) continue;
    if (wanted(it->path().filename().string()))
      out.push_back(it->path());
    else
      collect_cgroup_dirs(it->path(), wanted, out);
  }
}

}  // namespace

std::vector<std::string> cgroup_dirs_where(const std::function<bool(const std::string&)>& wanted) {
  std::vector<std::string> found;
  collect_cgroup_dirs("/sys/fs/cgroup", wanted, found);
  return found;
}

std::vector<std::string> cgroup_dirs_named(const std::string& id) {
  return cgroup_dirs_where([&](const std::string& name) { return name == id; });
}

nlohmann::json state_of(const std::string& id) {
  auto r = run_crx({"state", id});
  EXPECT_EQ(r.status, 0) << r.err;
  return nlohmann::json::parse(r.out.empty() ? "{}" : r.out);
}

void expect_nothing_left(const std::string& id) {
  EXPECT_FALSE(std::filesystem::exists(state_root() + "/" + id)) << "state dir left for " << id;
  EXPECT_TRUE(cgroup_dirs_named(id).empty()) << "cgroup left for " << id;
  EXPECT_EQ(read_text("/proc/self/mountinfo").find(id), std::string::npos) << "mount left for " << id;
}

bool process_gone(pid_t pid) {
  std::string stat = read_text("/proc/" + std::to_string(pid) + "/stat");
  if (stat.empty()) return true;
  auto close = stat.rfind(')');
  return close != std::string::npos && close + 2 < stat.size() && (stat[close + 2] == 'Z' || stat[close + 2] == 'X');
}

pid_t fork_into_new_namespaces(int clone_flags) {
  int p[2];
  if (::pipe2(p, O_CLOEXEC) != 0) throw_errno("pipe2");
  pid_t pid = ::fork();
  if (pid == 0) {
    char ok = ::unshare(clone_flags) == 0 ? 1 : 0;
    (void)!::write(p[1], &ok, 1);
    for (;;) ::pause();
  }
  ::close(p[1]);
  char ok = 0;
  ssize_t n = pid > 0 ? ::read(p[0], &ok, 1) : 0;
  ::close(p[0]);
  if (n == 1 && ok) return pid;
  if (pid > 0) {
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
  }
  throw Error("a process in new namespaces (unshare " + std::to_string(clone_flags) + ")",
              Cause::Other);
}

void force_delete(const std::string& id) { run_crx({"delete", "--force", id}); }

std::string shell_quoted(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

Result run_crx_detached(const std::vector<std::string>& args) {
  TempDir tmp("crx-detached");
  std::string err_file = tmp / "err";
  std::string cmd = shell_quoted(CRX_BINARY) + " --root " + shell_quoted(state_root());
  for (const auto& a : args) cmd += " " + shell_quoted(a);
  Result r = run_sh(cmd + " </dev/null >/dev/null 2>" + shell_quoted(err_file));
  r.err = read_text(err_file);
  return r;
}

std::string cgroup_file(int pid, const std::string& controller, const std::string& file) {
  bool v2 = std::filesystem::exists("/sys/fs/cgroup/cgroup.controllers");
  std::istringstream in(read_text("/proc/" + std::to_string(pid) + "/cgroup"));
  for (std::string line; std::getline(in, line);) {
    auto a = line.find(':'), b = line.find(':', a + 1);
    std::string ctrls = line.substr(a + 1, b - a - 1), path = line.substr(b + 1);
    if (!controller.empty() && ("," + ctrls + ",").find("," + controller + ",") != std::string::npos)
      return "/sys/fs/cgroup/" + ctrls + path + "/" + file;
    if (controller.empty() && ctrls.empty() && v2) return "/sys/fs/cgroup" + path + "/" + file;
  }
  return "";
}

int init_pid(const std::string& id) { return nlohmann::json::parse(run_crx({"state", id}).out)["pid"]; }

Running::Running(std::vector<std::string> args, const std::function<void(nlohmann::json&)>& edit)
    : bundle(std::move(args)) {
  if (edit) edit(bundle.config());
  bundle.write();
  auto r = run_crx_detached({"run", "-d", "--bundle", bundle.dir(), id});
  EXPECT_EQ(r.status, 0) << r.err;
}

Running::~Running() {
  force_delete(id);
  expect_nothing_left(id);
}

ConsoleSocket::ConsoleSocket(const std::string& path) {
  listener_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::snprintf(addr.sun_path, sizeof addr.sun_path, "%s", path.c_str());
  EXPECT_EQ(::bind(listener_, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  EXPECT_EQ(::listen(listener_, 1), 0);
}

ConsoleSocket::~ConsoleSocket() { ::close(listener_); }

int ConsoleSocket::receive_master(std::string* name) {
  int conn = ::accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
  if (conn < 0) return -1;
  char payload[256] = {};
  char cbuf[CMSG_SPACE(sizeof(int))];
  iovec iov{payload, sizeof payload - 1};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = cbuf;
  msg.msg_controllen = sizeof cbuf;
  int master = -1;
  if (::recvmsg(conn, &msg, 0) > 0 && CMSG_FIRSTHDR(&msg))
    std::memcpy(&master, CMSG_DATA(CMSG_FIRSTHDR(&msg)), sizeof master);
  ::close(conn);
  if (name) *name = payload;
  return master;
}

std::string read_all(int fd) {
  std::string seen;
  char buf[256];
  for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) seen.append(buf, static_cast<size_t>(n));
  return seen;
}

}  // namespace crx::test
