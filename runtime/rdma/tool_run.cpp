#include "rdma/tool_run.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

#include "common/child_process.hpp"
#include "common/retry_eintr.hpp"
#include "common/unique_fd.hpp"
#include "rdma/rdma_error.hpp"

namespace crx::rdma {
namespace {

UniqueFd pipe_pair(UniqueFd& write_end, const std::string& tool) {
  int p[2];
  if (::pipe2(p, O_CLOEXEC) != 0) throw_rdma_errno(RdmaCause::ToolFailed, "pipe for " + tool, errno);
  write_end.reset(p[1]);
  return UniqueFd(p[0]);
}

}  // namespace

bool ToolResult::ok() const { return WIFEXITED(status) && WEXITSTATUS(status) == 0; }

std::string ToolResult::failure() const {
  std::string why = describe_wait_status(status);
  std::string e = err;
  while (!e.empty() && (e.back() == '\n' || e.back() == ' ')) e.pop_back();
  auto nl = e.rfind('\n');
  if (nl != std::string::npos) e = e.substr(nl + 1);
  return e.empty() ? why : why + ": " + e;
}

ToolResult run_tool(const std::vector<std::string>& argv) {
  UniqueFd out_w, err_w;
  UniqueFd out_r = pipe_pair(out_w, argv.at(0));
  UniqueFd err_r = pipe_pair(err_w, argv.at(0));
  ChildProcess child;
  try {
    SpawnOptions o;
    o.stdout_fd = out_w.get();
    o.stderr_fd = err_w.get();
    child = spawn(argv, o);
  } catch (const Error& e) {
    throw RdmaError(RdmaCause::ToolFailed, e.what(), e.sys_errno());
  }
  out_w.reset();
  err_w.reset();
  ToolResult r;
  struct pollfd p[2] = {{out_r.get(), POLLIN, 0}, {err_r.get(), POLLIN, 0}};
  std::string* sinks[2] = {&r.out, &r.err};
  int open = 2;
  char buf[8192];
  while (open > 0) {
    if (retry_eintr([&] { return ::poll(p, 2, -1); }) < 0) {
      throw_rdma_errno(RdmaCause::ToolFailed, "poll " + argv[0], errno);
    }
    for (int i = 0; i < 2; ++i) {
      if (p[i].fd < 0 || !(p[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      ssize_t n = retry_eintr([&] { return ::read(p[i].fd, buf, sizeof buf); });
      if (n > 0) {
        sinks[i]->append(buf, static_cast<size_t>(n));
      } else {
        p[i].fd = -1;
        --open;
      }
    }
  }
  r.status = child.wait();
  return r;
}

}  // namespace crx::rdma
