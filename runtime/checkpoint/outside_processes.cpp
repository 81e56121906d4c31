#include "checkpoint/outside_processes.hpp"

#include <dirent.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <climits>
#include <map>
#include <set>

#include "common/error.hpp"
#include "common/fs.hpp"
#include "cgroup/cgroup.hpp"

namespace crx::checkpoint {
namespace {

std::string read_link(const std::string& path) {
  char buf[PATH_MAX];
  ssize_t n = ::readlink(path.c_str(), buf, sizeof buf - 1);
  if (n <= 0) return {};
  return std::string(buf, static_cast<size_t>(n));
}

std::string short_command(std::string s) {
  constexpr size_t kMax = 60;
  if (s.size() > kMax) s = s.substr(0, kMax - 3) + "...";
  return s;
}

}  // namespace

ProcessSplit split_processes(const ProcessTable& t, pid_t init) {
  std::set<pid_t> candidates;
  for (pid_t p : t.cgroup_pids()) candidates.insert(p);
  for (pid_t p : t.pid_namespace_pids()) candidates.insert(p);
  candidates.insert(init);

  // in_tree[p]: p descends from init. A walk up the parents ends at init
  // (inside), at a process already decided, or at the top (outside).
  std::map<pid_t, bool> in_tree{{init, true}};
  std::map<pid_t, ProcessInfo> infos;
  auto info_of = [&](pid_t p) -> const ProcessInfo* {
    auto it = infos.find(p);
    if (it != infos.end()) return &it->second;
    auto i = t.info(p);
    if (!i) return nullptr;
    return &infos.emplace(p, *i).first->second;
  };
  auto decide = [&](pid_t start) {
    std::vector<pid_t> path;
    bool inside = false;
    pid_t p = start;
    for (int depth = 0; depth < 4096; ++depth) {
      if (auto it = in_tree.find(p); it != in_tree.end()) {
        inside = it->second;
        break;
      }
      path.push_back(p);
      const ProcessInfo* i = info_of(p);
      if (!i || i->ppid <= 0 || i->ppid == p) break;  // gone, or the top
      p = i->ppid;
    }
    for (pid_t q : path) in_tree[q] = inside;
    return inside;
  };

  ProcessSplit out;
  for (pid_t p : candidates) {
    const ProcessInfo* i = info_of(p);
    if (!i || i->state == 'Z' || i->state == 'X') continue;  // gone or dead
    (decide(p) ? out.in_tree : out.outside).push_back({p, i->command});
  }
  return out;  // std::set: sorted by pid
}

std::vector<pid_t> ProcessSplit::in_tree_pids() const {
  std::vector<pid_t> out;
  for (const auto& p : in_tree) out.push_back(p.pid);
  return out;
}

std::vector<OutsideProcess> processes_outside_tree(const ProcessTable& t, pid_t init) {
  return split_processes(t, init).outside;
}

std::vector<OutsideProcess> processes_in_tree(const ProcessTable& t, pid_t init) {
  return split_processes(t, init).in_tree;
}

std::string describe(const std::vector<OutsideProcess>& procs) {
  std::string s;
  for (const auto& p : procs) {
    if (!s.empty()) s += ", ";
    s += std::to_string(p.pid) + " (" + short_command(p.command) + ")";
  }
  return s;
}

std::string outside_processes_error(const std::string& id, const std::vector<OutsideProcess>& p) {
  std::string n = std::to_string(p.size());
  return "container " + id + " has " + n + (p.size() == 1 ? " process" : " processes") +
         " outside its init's process tree (crx exec), which CRIU cannot carry: " + describe(p) +
         "; stop " + (p.size() == 1 ? "it" : "them") +
         ", or pass --kill-exec to accept losing " + (p.size() == 1 ? "it" : "them");
}

SystemProcessTable::SystemProcessTable(const state::ContainerState& st)
    : cgroup_(st.cgroup), init_(st.pid) {}

std::vector<pid_t> SystemProcessTable::cgroup_pids() const {
  if (cgroup_.is_null() || cgroup_.empty()) return {};
  return cgroup::Cgroup::load(cgroup_).pids();
}

std::vector<pid_t> SystemProcessTable::pid_namespace_pids() const {
  std::string ns = read_link("/proc/" + std::to_string(init_) + "/ns/pid");
  if (ns.empty() || ns == read_link("/proc/self/ns/pid")) return {};
  std::vector<pid_t> out;
  DIR* d = ::opendir("/proc");
  if (!d) throw_errno("opendir /proc");
  while (auto* e = ::readdir(d)) {
    if (!std::isdigit(static_cast<unsigned char>(e->d_name[0]))) continue;
    if (read_link(std::string("/proc/") + e->d_name + "/ns/pid") == ns)
      out.push_back(static_cast<pid_t>(std::stol(e->d_name)));
  }
  ::closedir(d);
  return out;
}

std::optional<ProcessInfo> SystemProcessTable::info(pid_t pid) const {
  std::string base = "/proc/" + std::to_string(pid);
  std::string stat;
  try {
    stat = read_file(base + "/stat");
  } catch (const Error&) {
    return std::nullopt;
  }
  // "pid (comm) S ppid ...": comm may hold spaces and parentheses.
  size_t open = stat.find('('), close = stat.rfind(')');
  if (open == std::string::npos || close == std::string::npos || close + 4 > stat.size())
    return std::nullopt;
  ProcessInfo i;
  i.state = stat[close + 2];
  i.ppid = static_cast<pid_t>(std::atol(stat.c_str() + close + 4));
  std::string cmdline;
  try {
    cmdline = read_file(base + "/cmdline");
  } catch (const Error&) {
  }
  while (!cmdline.empty() && cmdline.back() == '\0') cmdline.pop_back();
  std::replace(cmdline.begin(), cmdline.end(), '\0', ' ');
  i.command = cmdline.empty() ? "[" + stat.substr(open + 1, close - open - 1) + "]" : cmdline;
  return i;
}

ProcessSplit container_processes(const state::ContainerState& st) {
  return split_processes(SystemProcessTable(st), st.pid);
}

std::vector<OutsideProcess> container_processes_outside_tree(const state::ContainerState& st) {
  return container_processes(st).outside;
}

std::vector<OutsideProcess> container_processes_in_tree(const state::ContainerState& st) {
  return container_processes(st).in_tree;
}

}  // namespace crx::checkpoint
