#include "version.hpp"

#include <fcntl.h>
#include <poll.h>
#include <seccomp.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <chrono>

#include "cli.hpp"
#include "common/retry_eintr.hpp"
#include "crx_version.h"
#include "spec/version.hpp"

namespace crx::cmd {

namespace {

// stdout of argv (stderr to /dev/null), at most a few KiB and 2 seconds.
std::string output_of(const std::vector<std::string>& argv) {
  int p[2];
  if (::pipe2(p, O_CLOEXEC) != 0) return {};
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = ::fork();
  if (pid < 0) {
    ::close(p[0]);
    ::close(p[1]);
    return {};
  }
  if (pid == 0) {
    ::dup2(p[1], 1);
    int null = ::open("/dev/null", O_RDWR);
    if (null >= 0) {
      ::dup2(null, 0);
      ::dup2(null, 2);
    }
    ::execvp(args[0], args.data());
    ::_exit(127);
  }
  ::close(p[1]);
  std::string out;
  auto until = std::chrono::steady_clock::now() + std::chrono::seconds(2);
  char buf[1024];
  bool eof = false;
  while (out.size() < 8192) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        until - std::chrono::steady_clock::now());
    if (left.count() <= 0) break;
    struct pollfd pfd{p[0], POLLIN, 0};
    int r = retry_eintr([&] { return ::poll(&pfd, 1, static_cast<int>(left.count())); });
    if (r <= 0) break;
    ssize_t n = retry_eintr([&] { return ::read(p[0], buf, sizeof buf); });
    if (n <= 0) {
      eof = n == 0;
      break;
    }
    out.append(buf, static_cast<size_t>(n));
  }
  ::close(p[0]);
  // Closed its stdout: it is exiting; give it the rest of the 2 s.
  // Otherwise (time-out, too much output, a read error) it is killed.
  int status = 0;
  bool exited = false;
  while (eof && !exited && std::chrono::steady_clock::now() < until) {
    pid_t w = ::waitpid(pid, &status, WNOHANG);
    exited = w == pid;
    if (w == 0) ::usleep(1000);
  }
  if (!exited) {
    ::kill(pid, SIGKILL);
    retry_eintr([&] { return ::waitpid(pid, &status, 0); });
    return {};
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) return {};
  return out;
}

}  // namespace

std::string criu_version_of(const std::string& criu) {
  // `criu --version`: "Version: 3.17.1\n", a "GitID: ..." line on git builds.
  std::string out = output_of({criu, "--version"});
  const std::string key = "Version: ";
  auto at = out.find(key);
  if (at == std::string::npos) return {};
  std::string v = out.substr(at + key.size());
  return v.substr(0, v.find_first_of("\r\n \t"));
}

std::string version_text(const std::string& criu) {
  const struct scmp_version* seccomp = ::seccomp_version();
  std::string criu_version = criu_version_of(criu);
  std::string text = std::string("crx version ") + CRX_VERSION + "\n";
  text += std::string("commit: ") + CRX_COMMIT + "\n";
  text += std::string("spec: ") + spec::kOciVersion + "\n";
  text += "libseccomp: " + std::to_string(seccomp->major) + "." + std::to_string(seccomp->minor) +
          "." + std::to_string(seccomp->micro) + "\n";
  text += "criu: " + (criu_version.empty() ? std::string("not found") : criu_version);
  return text;
}

std::string criu_from_args(const std::vector<std::string>& args) {
  // Up to the subcommand: its flags are its own.
  size_t end = subcommand_index(args).value_or(args.size());
  for (size_t i = 0; i < end; ++i) {
    const std::string& a = args[i];
    if (a == "--criu" && i + 1 < end) return args[i + 1];
    if (a.rfind("--criu=", 0) == 0) return a.substr(7);
  }
  return "criu";
}

}  // namespace crx::cmd
