// Soak (label soak): create/start/kill/delete cycles of a busybox container
// with the real crx binary, in batches; after each batch nothing of the
// batch may be left: no state dir, cgroup, mount, tmpfs entry, process, and
// no fd that crx let a container or any process keep. The counts: CI size
// by default, CRX_SOAK=full for the 1000 cycles (tests/soak/README.md);
// CRX_SOAK_CYCLES overrides the number (the pure cgroup v2 guest runs 50).
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include "harness.hpp"

namespace crx::test {
namespace {

namespace fs = std::filesystem;

struct Size {
  int cycles;
  int batch;
};

// CRX_SOAK: unset or "ci" (the size CI runs), "full" (the counts).
Size soak_size() {
  const char* mode = std::getenv("CRX_SOAK");
  std::string m = mode ? mode : "";
  Size s{500, 50};
  if (m == "full") s = {1000, 100};
  else if (!m.empty() && m != "ci") ADD_FAILURE() << "CRX_SOAK must be unset, ci or full, not " << m;
  if (const char* n = std::getenv("CRX_SOAK_CYCLES")) {
    s.cycles = std::atoi(n);
    s.batch = std::min(s.batch, std::max(1, s.cycles));
  }
  return s;
}

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) out.push_back(l);
  return out;
}

// Field 22 of /proc/pid/stat: start time, so a reused pid is not mistaken
// for the container's process.
std::string start_time(pid_t pid) {
  std::string stat = read_text("/proc/" + std::to_string(pid) + "/stat");
  auto close = stat.rfind(')');
  if (close == std::string::npos) return "";
  std::istringstream rest(stat.substr(close + 2));
  std::string f;
  for (int i = 3; i <= 22 && rest >> f; ++i) {
  }
  return f;
}

std::set<std::string> fds_of(pid_t pid) {
  std::set<std::string> out;
  std::error_code ec;
  for (auto& e : fs::directory_iterator("/proc/" + std::to_string(pid) + "/fd", ec))
    out.insert(e.path().filename());
  return out;
}

// "mount point (fs type)" of every mount in this (the host's) mount
// namespace; a multiset, so a second mount stacked on a point counts too.
std::multiset<std::string> mounts() {
  std::multiset<std::string> out;
  for (auto& l : lines_of(read_text("/proc/self/mountinfo"))) {
    auto dash = l.find(" - ");
    if (dash == std::string::npos) continue;
    std::istringstream f(l), after(l.substr(dash + 3));
    std::string id, parent, devno, root, point, type;
    f >> id >> parent >> devno >> root >> point;
    after >> type;
    out.insert(point + " (" + type + ")");
  }
  return out;
}

std::set<std::string> entries(const std::string& dir) {
  std::set<std::string> out;
  std::error_code ec;
  for (auto& e : fs::directory_iterator(dir, ec)) out.insert(e.path().filename());
  return out;
}

// Processes whose executable is the crx binary under test (a crx that did
// not exit holds its state dir lock and whatever it opened).
std::vector<pid_t> crx_processes() {
  std::vector<pid_t> out;
  std::error_code ec;
  const auto self = fs::canonical(CRX_BINARY, ec);
  for (auto& e : fs::directory_iterator("/proc", ec)) {
    const std::string name = e.path().filename();
    if (name.empty() || !std::all_of(name.begin(), name.end(), ::isdigit)) continue;
    std::error_code ec2;
    auto exe = fs::read_symlink(e.path() / "exe", ec2);
    if (!ec2 && exe == self) out.push_back(std::stoi(name));
  }
  return out;
}

// "pid fd -> target" of every open fd in the system whose target lies under
// one of the given paths.
std::vector<std::string> fds_into(const std::vector<std::string>& paths) {
  std::vector<std::string> out;
  std::error_code ec;
  for (auto& p : fs::directory_iterator("/proc", ec)) {
    const std::string name = p.path().filename();
    if (name.empty() || !std::all_of(name.begin(), name.end(), ::isdigit)) continue;
    std::error_code ec2;
    for (auto& fd : fs::directory_iterator(p.path() / "fd", ec2)) {
      std::error_code ec3;
      const std::string target = fs::read_symlink(fd.path(), ec3).string();
      if (ec3) continue;
      for (const auto& path : paths)
        if (target.rfind(path, 0) == 0) out.push_back(name + " " + fd.path().filename().string() + " -> " + target);
    }
  }
  return out;
}

// Cgroup directories (any hierarchy, any depth) whose name starts with prefix.
std::vector<std::string> cgroups_starting(const std::string& prefix) {
  return cgroup_dirs_where([&](const std::string& name) { return name.rfind(prefix, 0) == 0; });
}

// Waits until pid has exec'd `comm` (the container's process, after crx
// start has let the init go on).
bool wait_for_comm(pid_t pid, const std::string& comm) {
  for (int i = 0; i < 500; ++i) {
    std::string c = read_text("/proc/" + std::to_string(pid) + "/comm");
    if (!c.empty() && c.back() == '\n') c.pop_back();
    if (c == comm) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

bool wait_gone(pid_t pid) {
  for (int i = 0; i < 500 && !process_gone(pid); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  return process_gone(pid);
}

template <class C>
std::string joined(const C& c) {
  std::string s;
  for (const auto& x : c) s += (s.empty() ? "" : ", ") + std::string(x);
  return s.empty() ? "(none)" : s;
}

TEST(Soak, CreateStartKillDeleteCyclesLeaveNothingBehind) {
  CRX_REQUIRE_ROOT();
  const Size size = soak_size();
  Bundle b({"sleep", "1000"});
  const std::string prefix = "soak-" + std::to_string(::getpid()) + "-";
  const std::vector<std::string> ours{state_root(), b.dir(), busybox_rootfs()};
  // What the host looks like before the first container.
  const auto own_fds = fds_of(::getpid());
  const auto mounts_before = mounts();
  const auto shm_before = entries("/dev/shm");
  const auto state_before = entries(state_root());
  const auto t0 = std::chrono::steady_clock::now();

  for (int done = 0, batch_no = 1; done < size.cycles; ++batch_no) {
    const auto tb = std::chrono::steady_clock::now();
    std::vector<std::pair<pid_t, std::string>> pids;  // pid, start time
    const int n = std::min(size.batch, size.cycles - done);
    for (int i = 0; i < n; ++i, ++done) {
      const std::string id = prefix + std::to_string(done);
      auto r = run_crx({"create", "--bundle", b.dir(), id});
      ASSERT_EQ(r.status, 0) << "cycle " << done << ": " << r.err;
      const pid_t pid = init_pid(id);
      pids.emplace_back(pid, start_time(pid));
      r = run_crx({"start", id});
      ASSERT_EQ(r.status, 0) << "cycle " << done << ": " << r.err;
      // The container's process keeps its stdio and nothing crx opened
      // (state dir lock, exec.fifo, sync socket, cgroup dirs).
      ASSERT_TRUE(wait_for_comm(pid, "sleep")) << "cycle " << done << ": the process never exec'd";
      EXPECT_EQ(joined(fds_of(pid)), "0, 1, 2") << "cycle " << done << ": fds of the container's process";
      r = run_crx({"kill", id, "KILL"});
      ASSERT_EQ(r.status, 0) << "cycle " << done << ": " << r.err;
      ASSERT_TRUE(wait_gone(pid)) << "cycle " << done << ": SIGKILL did not end " << pid;
      // A plain delete (no --force): the container is stopped by now.
      r = run_crx({"delete", id});
      ASSERT_EQ(r.status, 0) << "cycle " << done << ": " << r.err;
    }
    const std::string where = "after batch " + std::to_string(batch_no) + " (" + std::to_string(done) + " cycles)";
    // Processes: every container process of the batch is gone, and no crx.
    for (const auto& [pid, started] : pids)
      EXPECT_TRUE(process_gone(pid) || start_time(pid) != started) << where << ": process " << pid << " left";
    EXPECT_EQ(crx_processes().size(), 0u) << where << ": a crx process is still running";
    // State dirs.
    EXPECT_EQ(joined(entries(state_root())), joined(state_before)) << where << ": state root";
    // Cgroups.
    EXPECT_EQ(joined(cgroups_starting(prefix)), "(none)") << where << ": cgroups";
    // Mounts: none that names our rootfs, bundle, state or ids; none new at all.
    std::vector<std::string> named;
    for (auto& l : lines_of(read_text("/proc/self/mountinfo")))
      for (const auto& p : std::vector<std::string>{state_root(), b.dir(), busybox_rootfs(), prefix})
        if (l.find(p) != std::string::npos) named.push_back(l);
    EXPECT_EQ(joined(named), "(none)") << where << ": mounts";
    std::vector<std::string> new_mounts;  // of any type and anywhere, tmpfs included
    std::ranges::set_difference(mounts(), mounts_before, std::back_inserter(new_mounts));
    EXPECT_EQ(joined(new_mounts), "(none)") << where << ": new mounts";
    std::vector<std::string> new_shm;
    std::ranges::set_difference(entries("/dev/shm"), shm_before, std::back_inserter(new_shm));
    EXPECT_EQ(joined(new_shm), "(none)") << where << ": /dev/shm";
    // Fds: no process holds anything of ours; this process has what it had.
    EXPECT_EQ(joined(fds_into(ours)), "(none)") << where << ": fds into the state root, bundle or rootfs";
    EXPECT_EQ(joined(fds_of(::getpid())), joined(own_fds)) << where << ": the test's own fds";
    const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - tb).count();
    std::printf("soak: %s: %.1f s, %.0f ms a cycle, nothing left\n", where.c_str(), secs, 1000 * secs / n);
    if (HasFailure()) return;
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("soak: %d create/start/kill/delete cycles in %.1f s, nothing left\n", size.cycles, secs);
}

}  // namespace
}  // namespace crx::test
