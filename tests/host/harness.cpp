#include "harness.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

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

std::string temp_dir(const std::string& stem) {
  std::string tmpl = "/tmp/crx-" + stem + "-XXXXXX";
  if (!::mkdtemp(tmpl.data())) std::abort();
  return tmpl;
}

const std::string& busybox_rootfs() {
  static const std::string dir = [] {
    std::string d = temp_dir("rootfs");
    ::chmod(d.c_str(), 0755);  // reachable by a container root mapped to another uid
    auto r = run_sh(std::string(CRX_SOURCE_DIR) + "/bundles/busybox/make-rootfs.sh " + d);
    if (r.status != 0) {
      std::fprintf(stderr, "make-rootfs failed: %s\n", r.err.c_str());
      std::abort();
    }
    std::atexit([] { std::filesystem::remove_all(busybox_rootfs()); });
    return d;
  }();
  return dir;
}

const std::string& state_root() {
  static const std::string dir = [] {
    std::string d = temp_dir("state");
    std::atexit([] { std::filesystem::remove_all(state_root()); });
    return d;
  }();
  return dir;
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
  dir_ = temp_dir("bundle");
  auto r = run_crx({"spec", "--bundle", dir_});
  if (r.status != 0) {
    std::fprintf(stderr, "crx spec failed: %s\n", r.err.c_str());
    std::abort();
  }
  config_ = nlohmann::json::parse(read_text(dir_ + "/config.json"));
  config_["root"]["path"] = busybox_rootfs();
  config_["root"]["readonly"] = true;
  config_["process"]["terminal"] = false;
  config_["process"]["args"] = args;
  write();
}

Bundle::~Bundle() { std::filesystem::remove_all(dir_); }

void Bundle::write() const { write_text(dir_ + "/config.json", config_.dump(2)); }

std::string unique_id(const std::string& stem) {
  static int counter = 0;
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  std::string name = info ? info->name() : stem;
  return stem + "-" + name.substr(0, 40) + "-" + std::to_string(::getpid()) + "-" + std::to_string(++counter);
}

std::vector<std::string> cgroup_dirs_named(const std::string& id) {
  std::vector<std::string> found;
  std::error_code ec;
  for (auto it = std::filesystem::recursive_directory_iterator(
           "/sys/fs/cgroup", std::filesystem::directory_options::skip_permission_denied, ec);
       it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
    if (ec) break;
    if (it->is_directory(ec) && it->path().filename() == id) found.push_back(it->path());
    if (it.depth() > 3) it.disable_recursion_pending();
  }
  return found;
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

void force_delete(const std::string& id) { run_crx({"delete", "--force", id}); }

}  // namespace crx::test
