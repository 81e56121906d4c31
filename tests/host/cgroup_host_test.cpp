// cgroups on the host kernel (root). On the development machines the layout
// is hybrid: v1 controllers plus a cgroup2 at /sys/fs/cgroup/unified that
// only offers hugetlb. The pure-v2 test runs in the qemu guests.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "common/error.hpp"
#include "common/fs.hpp"
#include "common/retry_eintr.hpp"
#include "cgroup/cgroup.hpp"
#include "cgroup/bpf_devices.hpp"

namespace cg = crx::cgroup;
using crx::spec::DeviceRule;

namespace {

bool is_root() { return ::geteuid() == 0; }

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string s = ss.str();
  while (!s.empty() && s.back() == '\n') s.pop_back();
  return s;
}

std::string unique_name(const char* what) {
  return std::string("crx-test-") + what + "-" + std::to_string(::getpid());
}

DeviceRule rule(bool allow, const char* type, std::optional<int64_t> major,
                std::optional<int64_t> minor, const char* access) {
  DeviceRule r;
  r.allow = allow;
  r.type = type;
  r.major = major;
  r.minor = minor;
  r.access = access;
  return r;
}

// A child that waits on a pipe until told to go on, then runs `body` and
// exits with its result. Killed and reaped on destruction.
class Child {
 public:
  template <class F>
  explicit Child(F body) {
    int p[2];
    if (::pipe2(p, O_CLOEXEC) != 0) throw std::runtime_error("pipe");
    pid_ = ::fork();
    if (pid_ == 0) {
      ::close(p[1]);
      char c;
      crx::retry_eintr([&] { return ::read(p[0], &c, 1); });
      ::_exit(body());
    }
    ::close(p[0]);
    go_ = p[1];
  }
  ~Child() {
    if (go_ >= 0) ::close(go_);
    if (pid_ > 0 && !reaped_) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
    }
  }
  pid_t pid() const { return pid_; }
  void go() {
    ::close(go_);
    go_ = -1;
  }
  int wait_status() {
    int st = 0;
    ::waitpid(pid_, &st, 0);
    reaped_ = true;
    return st;
  }

 private:
  pid_t pid_ = -1;
  int go_ = -1;
  bool reaped_ = false;
};

char proc_state(pid_t pid) {
  auto stat = slurp("/proc/" + std::to_string(pid) + "/stat");
  auto close = stat.rfind(')');
  return close == std::string::npos || close + 2 >= stat.size() ? '?' : stat[close + 2];
}

// Exit code of a child that opens path: 0 ok, 1 EPERM, 2 other errors.
int try_open(const char* path) {
  int fd = ::open(path, O_RDWR | O_CLOEXEC);
  if (fd >= 0) return 0;
  return errno == EPERM ? 1 : 2;
}

class CgroupHost : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!is_root()) GTEST_SKIP() << "needs root";
    layout_ = cg::detect_layout();
  }
  cg::Layout layout_ = cg::Layout::V2;
};

TEST_F(CgroupHost, DetectsTheLayoutOfThisHost) {
  // The layout must agree with what is mounted at /sys/fs/cgroup/unified.
  bool unified = crx::path_exists("/sys/fs/cgroup/unified/cgroup.controllers");
  bool root_v2 = crx::path_exists("/sys/fs/cgroup/cgroup.controllers");
  EXPECT_EQ(layout_ == cg::Layout::V2, root_v2);
  EXPECT_EQ(layout_ == cg::Layout::Hybrid, !root_v2 && unified);
}

TEST_F(CgroupHost, V1LimitsAreWrittenAndReadBack) {
  if (layout_ == cg::Layout::V2) GTEST_SKIP() << "v1 controller test; this host is pure v2";
  crx::spec::Resources res;
  res.memory.emplace();
  res.memory->limit = 64 << 20;
  res.memory->swap = 128 << 20;
  res.memory->reservation = 32 << 20;
  res.cpu.emplace();
  res.cpu->shares = 512;
  res.cpu->quota = 20000;
  res.cpu->period = 50000;
  res.cpu->cpus = "0";
  res.cpu->mems = "0";
  res.pids_limit = 32;
  res.devices = {rule(false, "a", std::nullopt, std::nullopt, "rwm")};
  for (auto& r : cg::default_device_rules()) res.devices.push_back(r);

  auto c = cg::Cgroup::create(unique_name("limits"), "limits", false, &res);
  auto mem = c.path_for("memory");
  ASSERT_FALSE(mem.empty());
  EXPECT_EQ(slurp(mem + "/memory.limit_in_bytes"), std::to_string(64 << 20));
  EXPECT_EQ(slurp(mem + "/memory.memsw.limit_in_bytes"), std::to_string(128 << 20));
  EXPECT_EQ(slurp(mem + "/memory.soft_limit_in_bytes"), std::to_string(32 << 20));
  EXPECT_EQ(slurp(c.path_for("cpu") + "/cpu.shares"), "512");
  EXPECT_EQ(slurp(c.path_for("cpu") + "/cpu.cfs_period_us"), "50000");
  EXPECT_EQ(slurp(c.path_for("cpu") + "/cpu.cfs_quota_us"), "20000");
  EXPECT_EQ(slurp(c.path_for("cpuset") + "/cpuset.cpus"), "0");
  EXPECT_EQ(slurp(c.path_for("pids") + "/pids.max"), "32");
  auto devices = slurp(c.path_for("devices") + "/devices.list");
  EXPECT_NE(devices.find("c 1:3 rwm"), std::string::npos) << devices;
  EXPECT_EQ(devices.find("a *:* rwm"), std::string::npos) << devices;

  // update: lower the memory limit below the old memsw, raise both later.
  crx::spec::Resources upd;
  upd.memory.emplace();
  upd.memory->limit = 256 << 20;
  upd.memory->swap = 512 << 20;
  c.apply(upd);
  EXPECT_EQ(slurp(mem + "/memory.limit_in_bytes"), std::to_string(256 << 20));
  EXPECT_EQ(slurp(mem + "/memory.memsw.limit_in_bytes"), std::to_string(512 << 20));
  // runc's default "unlimited" pair.
  upd.memory->limit = -1;
  upd.memory->swap = -1;
  c.apply(upd);

  auto dirs = c.dirs();
  c.destroy();
  for (const auto& [ctrl, dir] : dirs) EXPECT_FALSE(crx::path_exists(dir)) << ctrl << " " << dir;
}

TEST_F(CgroupHost, DeniedDeviceCannotBeOpened) {
  crx::spec::Resources res;
  res.devices = {rule(false, "a", std::nullopt, std::nullopt, "rwm"),
                 rule(true, "c", 1, 5, "rwm")};  // only /dev/zero
  auto c = cg::Cgroup::create(unique_name("devices"), "devices", false, &res);
  Child null_child([] { return try_open("/dev/null"); });
  Child zero_child([] { return try_open("/dev/zero"); });
  c.add_process(null_child.pid());
  c.add_process(zero_child.pid());
  null_child.go();
  zero_child.go();
  int st = null_child.wait_status();
  EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 1) << "open /dev/null was not refused: " << st;
  st = zero_child.wait_status();
  EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << "open /dev/zero failed: " << st;
  c.destroy();
}

TEST_F(CgroupHost, ProcessesAreFoundFrozenAndThawed) {
  auto c = cg::Cgroup::create(unique_name("freeze"), "freeze", false, nullptr);
  Child child([] {
    for (;;) ::pause();
    return 0;
  });
  c.add_process(child.pid());
  auto pids = c.pids();
  EXPECT_NE(std::find(pids.begin(), pids.end(), child.pid()), pids.end());

  EXPECT_FALSE(c.frozen());
  c.freeze();
  EXPECT_TRUE(c.frozen());
  if (layout_ != cg::Layout::V2) {
    EXPECT_EQ(proc_state(child.pid()), 'D');  // the v1 freezer's state
  }
  c.freeze();  // twice is fine
  c.thaw();
  EXPECT_FALSE(c.frozen());
  if (layout_ != cg::Layout::V2) {
    EXPECT_NE(proc_state(child.pid()), 'D');
  }

  auto s = c.stats();
  EXPECT_GE(s["pids"].value("current", 0u), 1u) << s.dump();
  EXPECT_TRUE(s["cpu"].contains("usage")) << s.dump();
  EXPECT_TRUE(s["memory"]["usage"].contains("limit")) << s.dump();
  EXPECT_TRUE(s.contains("hugetlb")) << s.dump();

  // destroy with a live process fails and says which directory.
  try {
    c.destroy();
    ADD_FAILURE() << "destroy succeeded with a process inside";
  } catch (const crx::Error& e) {
    EXPECT_NE(std::string(e.what()).find("rmdir"), std::string::npos) << e.what();
  }
  ::kill(child.pid(), SIGKILL);
  child.wait_status();
  c.destroy();
  c.destroy();  // idempotent
  for (const auto& [ctrl, dir] : c.dirs()) EXPECT_FALSE(crx::path_exists(dir)) << dir;
}

// kill --all, delete --force, a failed migration and the rollbacks of
// create and restore: a frozen task dies only once thawed (v1), and a
// cgroup that was only planned has nothing to kill.
TEST_F(CgroupHost, KillAllEmptiesAFrozenCgroup) {
  auto planned = cg::Cgroup::plan(unique_name("killall-planned"), "killall-planned", false);
  planned.kill_all();

  auto c = cg::Cgroup::create(unique_name("killall"), "killall", false, nullptr);
  Child child([] {
    for (;;) ::pause();
    return 0;
  });
  c.add_process(child.pid());
  c.freeze();
  c.kill_all();
  int st = child.wait_status();
  EXPECT_TRUE(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL) << st;
  EXPECT_FALSE(c.frozen());
  c.kill_all();  // empty: nothing to do
  c.destroy();
}

TEST_F(CgroupHost, SavedCgroupIsLoadedByALaterCommand) {
  auto c = cg::Cgroup::create(unique_name("saved"), "saved", false, nullptr);
  auto saved = c.save();
  auto again = cg::Cgroup::load(saved);
  EXPECT_EQ(again.dirs(), c.dirs());
  again.destroy();
  for (const auto& [ctrl, dir] : c.dirs()) EXPECT_FALSE(crx::path_exists(dir)) << dir;
}

TEST_F(CgroupHost, PlannedCgroupIsCleanedUpFromStateAlone) {
  // crx create records plan().save() before make(); if it is killed after
  // make(), delete --force has only the state to go by.
  std::string top = "/" + unique_name("plan");
  auto planned = cg::Cgroup::plan(top + "/c", "c", false);
  for (const auto& [ctrl, dir] : planned.dirs()) EXPECT_FALSE(crx::path_exists(dir)) << dir;
  auto saved = planned.save();
  EXPECT_FALSE(saved["created"].empty());
  crx::spec::Resources res;
  res.pids_limit = 10;
  planned.make(&res);
  EXPECT_TRUE(crx::path_exists(planned.path_for(layout_ == cg::Layout::V2 ? "unified" : "pids")));
  auto later = cg::Cgroup::load(saved);
  later.destroy();
  for (const auto& d : saved["created"]) EXPECT_FALSE(crx::path_exists(d.get<std::string>())) << d;
}

TEST_F(CgroupHost, NestedPathRemovesOnlyWhatItMade) {
  std::string top = "/" + unique_name("nest");
  auto first = cg::Cgroup::create(top + "/a/c1", "c1", false, nullptr);
  auto second = cg::Cgroup::create(top + "/a/c2", "c2", false, nullptr);
  auto mem_top = "/sys/fs/cgroup/" + std::string(layout_ == cg::Layout::V2 ? "" : "memory/") + top;
  EXPECT_TRUE(crx::path_exists(mem_top + "/a/c1"));
  first.destroy();  // c2 still lives below the shared parents
  EXPECT_FALSE(crx::path_exists(mem_top + "/a/c1"));
  EXPECT_TRUE(crx::path_exists(mem_top + "/a/c2"));
  second.destroy();
  first.destroy();  // parents made by the first one can go now
  EXPECT_FALSE(crx::path_exists(mem_top)) << mem_top;
}

TEST_F(CgroupHost, ACgroupMadeInsideTheContainersIsSeen) {
  // A migration's final dump leaves the cgroup to the destination only
  // when the container made none of its own below it (criu_sides.cpp).
  auto c = cg::Cgroup::create(unique_name("children"), "children", false, nullptr);
  EXPECT_FALSE(c.has_children());
  std::string dir = c.path_for(layout_ == cg::Layout::V2 ? "unified" : "memory");
  ASSERT_FALSE(dir.empty());
  ASSERT_EQ(::mkdir((dir + "/inner").c_str(), 0755), 0) << std::strerror(errno);
  EXPECT_TRUE(c.has_children());
  ASSERT_EQ(::rmdir((dir + "/inner").c_str()), 0) << std::strerror(errno);
  EXPECT_FALSE(c.has_children());
  c.destroy();
  try {
    c.has_children();
    FAIL() << "a removed cgroup had its children listed";
  } catch (const crx::Error& e) {
    EXPECT_EQ(e.sys_errno(), ENOENT) << e.what();
  }
}

TEST_F(CgroupHost, BadValueNamesFileAndValueAndLeavesNothing) {
  crx::spec::Resources res;
  res.cpu.emplace();
  res.cpu->cpus = "999";
  std::string name = unique_name("bad");
  try {
    cg::Cgroup::create("/" + name, "bad", false, &res);
    FAIL() << "cpuset.cpus 999 was accepted";
  } catch (const crx::Error& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("cgroup: write 999 to /sys/fs/cgroup/"), std::string::npos) << msg;
    EXPECT_NE(msg.find("cpuset.cpus: "), std::string::npos) << msg;
  }
  // nothing left in any hierarchy
  for (const char* h : {"cpuset", "memory", "pids", "unified", ""}) {
    std::string d = std::string("/sys/fs/cgroup/") + h + "/" + name;
    EXPECT_FALSE(crx::path_exists(d)) << d;
  }
}

TEST_F(CgroupHost, UnknownHugepageSizeIsRefused) {
  crx::spec::Resources res;
  res.hugepage_limits.push_back({"3MB", 1 << 20});
  try {
    cg::Cgroup::create(unique_name("huge"), "huge", false, &res);
    FAIL() << "3MB pages accepted";
  } catch (const crx::Error& e) {
    EXPECT_NE(std::string(e.what()).find("\"3MB\""), std::string::npos) << e.what();
  }
}

TEST_F(CgroupHost, HugetlbLimitLandsWhereTheControllerIs) {
  auto sizes = std::string(slurp("/sys/fs/cgroup/unified/cgroup.controllers"));
  bool v1_hugetlb = crx::path_exists("/sys/fs/cgroup/hugetlb");
  if (layout_ == cg::Layout::V2) sizes = slurp("/sys/fs/cgroup/cgroup.controllers");
  if (!v1_hugetlb && sizes.find("hugetlb") == std::string::npos)
    GTEST_SKIP() << "no hugetlb controller";
  if (!crx::path_exists("/sys/kernel/mm/hugepages/hugepages-2048kB")) GTEST_SKIP() << "no 2MB pages";
  crx::spec::Resources res;
  res.hugepage_limits.push_back({"2MB", 4 << 20});
  auto c = cg::Cgroup::create(unique_name("hugetlb"), "hugetlb", false, &res);
  std::string file = v1_hugetlb ? c.path_for("hugetlb") + "/hugetlb.2MB.limit_in_bytes"
                                : c.path_for("unified") + "/hugetlb.2MB.max";
  EXPECT_EQ(slurp(file), std::to_string(4 << 20));
  auto s = c.stats();
  EXPECT_TRUE(s["hugetlb"].contains("2MB")) << s.dump();
  c.destroy();
}

TEST_F(CgroupHost, OomKillIsCountedAndSignalled) {
  crx::spec::Resources res;
  res.memory.emplace();
  res.memory->limit = 16 << 20;
  res.memory->swap = 16 << 20;  // no swap: the allocation must hit the OOM killer
  auto c = cg::Cgroup::create(unique_name("oom"), "oom", false, &res);
  auto events = c.oom_events();
  EXPECT_EQ(c.oom_kill_count(), 0u);
  Child hog([] {
    size_t size = 256 << 20;
    auto* p = static_cast<char*>(::mmap(nullptr, size, PROT_READ | PROT_WRITE,
                                        MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
    for (size_t i = 0; i < size; i += 4096) p[i] = 1;
    return 0;
  });
  c.add_process(hog.pid());
  hog.go();
  int st = hog.wait_status();
  EXPECT_TRUE(WIFSIGNALED(st) && WTERMSIG(st) == SIGKILL) << "status " << st;
  pollfd pfd{events.fd(), POLLIN, 0};
  ASSERT_EQ(::poll(&pfd, 1, 10000), 1) << "no OOM event";
  EXPECT_GE(events.consume(), 1u);
  EXPECT_GE(c.oom_kill_count(), 1u);
  c.destroy();
}

TEST_F(CgroupHost, EbpfDeviceFilterOnCgroup2) {
  // Device programs work on any cgroup2 directory, also on the hybrid
  // layout's controller-less unified hierarchy: the v2 device path is
  // proven here as well as in the guests.
  std::string mnt = layout_ == cg::Layout::V2 ? "/sys/fs/cgroup" : "/sys/fs/cgroup/unified";
  if (!crx::path_exists(mnt + "/cgroup.procs")) GTEST_SKIP() << "no cgroup2 mount";
  std::string dir = mnt + "/" + unique_name("bpf");
  ASSERT_EQ(::mkdir(dir.c_str(), 0755), 0) << std::strerror(errno);
  struct Rm {
    std::string d;
    ~Rm() { ::rmdir(d.c_str()); }
  } rm{dir};

  std::vector<DeviceRule> allow_null_only = {
      rule(false, "a", std::nullopt, std::nullopt, "rwm"), rule(true, "c", 1, 3, "rwm")};
  std::vector<DeviceRule> allow_zero_only = {
      rule(false, "a", std::nullopt, std::nullopt, "rwm"), rule(true, "c", 1, 5, "rwm")};
  cg::bpf::attach_device_filter(dir, allow_null_only);
  cg::bpf::attach_device_filter(dir, allow_zero_only);  // replaces, does not stack
  EXPECT_EQ(cg::bpf::attached_device_programs(dir).size(), 1u);

  Child null_child([] { return try_open("/dev/null"); });
  Child zero_child([] { return try_open("/dev/zero"); });
  crx::write_file(dir + "/cgroup.procs", std::to_string(null_child.pid()));
  crx::write_file(dir + "/cgroup.procs", std::to_string(zero_child.pid()));
  null_child.go();
  zero_child.go();
  int st = null_child.wait_status();
  EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 1) << "open /dev/null was not refused: " << st;
  st = zero_child.wait_status();
  EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 0) << "open /dev/zero failed: " << st;
}

// Pure cgroup v2 (the qemu guests): every controller through one directory.
TEST_F(CgroupHost, V2LimitsFreezeAndDevices) {
  if (layout_ != cg::Layout::V2) GTEST_SKIP() << "needs a pure cgroup v2 host (runs in the guests)";
  crx::spec::Resources res;
  res.memory.emplace();
  res.memory->limit = 64 << 20;
  res.memory->reservation = 16 << 20;
  res.cpu.emplace();
  res.cpu->shares = 1024;
  res.cpu->quota = 20000;
  res.cpu->period = 100000;
  res.pids_limit = 40;
  res.devices = {rule(false, "a", std::nullopt, std::nullopt, "rwm"),
                 rule(true, "c", 1, 5, "rwm")};
  auto c = cg::Cgroup::create(unique_name("v2"), "v2", false, &res);
  auto dir = c.path_for("unified");
  EXPECT_EQ(slurp(dir + "/memory.max"), std::to_string(64 << 20));
  EXPECT_EQ(slurp(dir + "/memory.low"), std::to_string(16 << 20));
  EXPECT_EQ(slurp(dir + "/cpu.weight"), "39");
  EXPECT_EQ(slurp(dir + "/cpu.max"), "20000 100000");
  EXPECT_EQ(slurp(dir + "/pids.max"), "40");

  Child null_child([] { return try_open("/dev/null"); });
  c.add_process(null_child.pid());
  null_child.go();
  int st = null_child.wait_status();
  EXPECT_TRUE(WIFEXITED(st) && WEXITSTATUS(st) == 1) << "open /dev/null was not refused: " << st;

  Child sleeper([] {
    for (;;) ::pause();
    return 0;
  });
  c.add_process(sleeper.pid());
  c.freeze();
  EXPECT_TRUE(c.frozen());
  EXPECT_NE(slurp(dir + "/cgroup.events").find("frozen 1"), std::string::npos);
  c.thaw();
  EXPECT_FALSE(c.frozen());
  auto s = c.stats();
  EXPECT_EQ(s["pids"].value("limit", 0u), 40u) << s.dump();
  ::kill(sleeper.pid(), SIGKILL);
  sleeper.wait_status();
  c.destroy();
  EXPECT_FALSE(crx::path_exists(dir));
}

}  // namespace
