#include "cgroup/cgroup.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>
#include <sys/vfs.h>
#include <linux/magic.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <optional>
#include <set>
#include <sstream>

#include "common/error.hpp"
#include "common/fs.hpp"
#include "common/log.hpp"
#include "cgroup/convert.hpp"
#include "cgroup/drivers.hpp"
#include "cgroup/fs.hpp"
#include "cgroup/paths.hpp"

namespace crx::cgroup {

namespace {

const std::string kRoot = "/sys/fs/cgroup";

bool is_fs(const std::string& path, long magic) {
  struct statfs st {};
  return ::statfs(path.c_str(), &st) == 0 && static_cast<long>(st.f_type) == magic;
}

Layout parse_layout(const std::string& s) {
  if (s == "v2") return Layout::V2;
  if (s == "hybrid") return Layout::Hybrid;
  if (s == "v1") return Layout::V1;
  throw Error("cgroup: state has unknown cgroup layout \"" + s + "\"");
}

// The mounted hierarchies the container uses: for V2 the one at the root,
// otherwise every v1 hierarchy under it plus the unified one if present.
std::vector<Hierarchy> usable_hierarchies(Layout layout) {
  std::vector<Hierarchy> out;
  std::set<std::string> seen_controllers;
  for (auto& h : parse_mountinfo(read_file("/proc/self/mountinfo"))) {
    if (h.mountpoint.rfind(kRoot, 0) != 0) continue;
    if (h.v2) {
      std::string want = layout == Layout::V2 ? kRoot : kRoot + "/unified";
      if (h.mountpoint != want || seen_controllers.count("unified")) continue;
      seen_controllers.insert("unified");
    } else {
      if (layout == Layout::V2) continue;
      bool dup = false;
      for (const auto& c : h.controllers) dup |= seen_controllers.count(c) > 0;
      if (dup) continue;  // the same hierarchy mounted twice
      seen_controllers.insert(h.controllers.begin(), h.controllers.end());
    }
    out.push_back(std::move(h));
  }
  if (layout == Layout::V2 && out.empty())
    throw Error("cgroup: no cgroup2 mount at " + kRoot + " in /proc/self/mountinfo");
  return out;
}

std::string mount_of(const std::vector<Hierarchy>& hs, const std::string& dir) {
  const Hierarchy* h = hierarchy_of(hs, dir);
  return h ? h->mountpoint : std::string();
}

std::vector<std::string> unique_dirs(const std::map<std::string, std::string>& dirs) {
  std::vector<std::string> out;
  for (const auto& [_, d] : dirs)
    if (std::find(out.begin(), out.end(), d) == out.end()) out.push_back(d);
  return out;
}

// The cgroups right below dir (paths); nullopt with errno set when dir
// cannot be read.
std::optional<std::vector<std::string>> child_dirs(const std::string& dir) {
  DIR* d = ::opendir(dir.c_str());
  if (!d) return std::nullopt;
  std::vector<std::string> subs;
  while (auto* e = ::readdir(d)) {
    std::string name = e->d_name;
    if (e->d_type == DT_DIR && name != "." && name != "..") subs.push_back(dir + "/" + name);
  }
  ::closedir(d);
  return subs;
}

void collect_procs(const std::string& dir, std::vector<pid_t>& out) {
  auto procs = fs::read_if_exists(dir, "cgroup.procs");
  if (!procs) return;
  std::istringstream in(*procs);
  pid_t pid;
  while (in >> pid) out.push_back(pid);
  // Nested cgroups (a container that made its own) count as well.
  for (const auto& s : child_dirs(dir).value_or(std::vector<std::string>{})) collect_procs(s, out);
}

}  // namespace

Layout detect_layout(const std::string& root) {
  if (is_fs(root, CGROUP2_SUPER_MAGIC)) return Layout::V2;
  if (is_fs(root + "/unified", CGROUP2_SUPER_MAGIC)) return Layout::Hybrid;
  return Layout::V1;
}

const char* to_string(Layout layout) {
  switch (layout) {
    case Layout::V2: return "v2";
    case Layout::Hybrid: return "hybrid";
    case Layout::V1: return "v1";
  }
  return "?";
}

void check_hugepage_size(const std::string& page_size) {
  auto sizes = convert::hugepage_sizes();
  if (std::find(sizes.begin(), sizes.end(), page_size) != sizes.end()) return;
  std::string have;
  for (const auto& s : sizes) have += (have.empty() ? "" : ", ") + s;
  throw Error("cgroup: hugepage size \"" + page_size + "\" is not offered by this kernel (it has: " +
              (have.empty() ? "none" : have) + ")");
}

std::vector<spec::DeviceRule> default_device_rules() {
  auto rule = [](const char* type, std::optional<int64_t> major, std::optional<int64_t> minor,
                 const char* access) {
    spec::DeviceRule r;
    r.allow = true;
    r.type = type;
    r.major = major;
    r.minor = minor;
    r.access = access;
    return r;
  };
  return {
      rule("c", std::nullopt, std::nullopt, "m"),  // mknod of any device
      rule("b", std::nullopt, std::nullopt, "m"),
      rule("c", 1, 3, "rwm"),                      // /dev/null
      rule("c", 1, 8, "rwm"),                      // /dev/random
      rule("c", 1, 7, "rwm"),                      // /dev/full
      rule("c", 5, 0, "rwm"),                      // /dev/tty
      rule("c", 1, 5, "rwm"),                      // /dev/zero
      rule("c", 1, 9, "rwm"),                      // /dev/urandom
      rule("c", 136, std::nullopt, "rwm"),         // /dev/pts/*
      rule("c", 5, 2, "rwm"),                      // /dev/ptmx
  };
}

spec::Resources effective_resources(const spec::Linux& linux) {
  spec::Resources res = linux.resources.value_or(spec::Resources{});
  for (const auto& d : linux.devices) {
    if (d.type == 'p') continue;  // a fifo is no device for the cgroup
    spec::DeviceRule r;
    r.allow = true;
    r.type = d.type == 'b' ? "b" : "c";
    r.major = d.major;
    r.minor = d.minor;
    r.access = "rwm";
    res.devices.push_back(r);
  }
  for (auto& r : default_device_rules()) res.devices.push_back(std::move(r));
  return res;
}

Cgroup Cgroup::create(const spec::Linux& linux, const std::string& id, bool systemd) {
  auto res = effective_resources(linux);
  return create(linux.cgroups_path, id, systemd, &res);
}

Cgroup Cgroup::create(const std::string& cgroups_path, const std::string& id, bool systemd,
                      const spec::Resources* res) {
  auto cg = plan(cgroups_path, id, systemd);
  cg.make(res);
  return cg;
}

Cgroup Cgroup::plan(const std::string& cgroups_path, const std::string& id, bool systemd) {
  Cgroup cg;
  cg.layout_ = detect_layout(kRoot);
  if (systemd) {
    if (!path_exists("/run/systemd/system"))
      throw Error("cgroup: --systemd-cgroup: systemd is not running on this host "
                  "(no /run/systemd/system)");
    // No D-Bus client yet: the scope's directory is made the same way as
    // systemd would name it, but systemd does not own it.
    cg.path_ = systemd_cgroup_path(cgroups_path, id);
  } else {
    cg.path_ = clean_cgroup_path(cgroups_path.empty() ? id : cgroups_path);
  }
  if (cg.path_.empty() || cg.path_ == "/")
    throw Error("cgroup: cgroupsPath \"" + cgroups_path + "\" names the root cgroup");

  Placement where;
  where.hierarchies = usable_hierarchies(cg.layout_);
  where.own = parse_proc_cgroup(read_file("/proc/self/cgroup"));
  where.use_v1 = cg.layout_ != Layout::V2;
  cg.dirs_ = container_dirs(where, cg.path_);
  // What mkdir -p will make, parents first: destroy() removes exactly these
  // (and the container's own directories).
  for (const auto& dir : unique_dirs(cg.dirs_)) {
    std::string cur = mount_of(where.hierarchies, dir);
    std::istringstream parts(dir.substr(cur.size()));
    std::string part;
    while (std::getline(parts, part, '/')) {
      if (part.empty()) continue;
      cur += "/" + part;
      if (!path_exists(cur)) cg.created_.push_back(cur);
    }
  }
  return cg;
}

namespace {
bool has_limits(const spec::Resources* res) {
  return res && (res->memory || res->cpu || res->pids_limit || res->block_io ||
                 !res->hugepage_limits.empty() || !res->unified.empty());
}
}  // namespace

void Cgroup::make(const spec::Resources* res) {
  auto hierarchies = usable_hierarchies(layout_);
  try {
    for (const auto& dir : unique_dirs(dirs_)) {
      std::string cur = mount_of(hierarchies, dir);
      std::istringstream parts(dir.substr(cur.size()));
      std::string part;
      bool cpuset = dirs_.count("cpuset") && dirs_.at("cpuset") == dir;
      while (std::getline(parts, part, '/')) {
        if (part.empty()) continue;
        cur += "/" + part;
        if (::mkdir(cur.c_str(), 0755) == 0) {
          if (std::find(created_.begin(), created_.end(), cur) == created_.end())
            created_.push_back(cur);
          if (cpuset) v1::init_cpuset_dir(cur);
        } else if (errno != EEXIST) {
          int err = errno;
          // Rootless without limits: run without a cgroup, as runc does.
          if (::geteuid() != 0 && !has_limits(res) &&
              (err == EACCES || err == EPERM || err == EROFS)) {
            log::debug("cgroup: " + cur + " is not writable; running without a cgroup");
            destroy();
            dirs_.clear();
            created_.clear();
            return;
          }
          throw_errno("cgroup: mkdir " + cur, err);
        }
      }
    }
    if (auto it = dirs_.find("unified"); it != dirs_.end()) {
      std::string mnt = mount_of(hierarchies, it->second);
      std::vector<std::string> wanted;
      if (layout_ == Layout::V2)
        wanted = v2::available_controllers(mnt);
      else if (!dirs_.count("hugetlb"))
        wanted = {"hugetlb"};  // hybrid: what v1 lacks
      v2::enable_controllers(mnt, it->second, wanted);
    }
    if (res) apply(*res);
  } catch (...) {
    try {
      destroy();
    } catch (const Error& e) {
      log::warn(std::string("cgroup: cleanup after failed create: ") + e.what());
    }
    throw;
  }
}

nlohmann::json Cgroup::save() const {
  return {{"layout", to_string(layout_)}, {"path", path_}, {"dirs", dirs_}, {"created", created_}};
}

Cgroup Cgroup::load(const nlohmann::json& saved) {
  Cgroup cg;
  try {
    cg.layout_ = parse_layout(saved.at("layout").get<std::string>());
    cg.path_ = saved.at("path").get<std::string>();
    cg.dirs_ = saved.at("dirs").get<std::map<std::string, std::string>>();
    cg.created_ = saved.value("created", std::vector<std::string>{});
  } catch (const nlohmann::json::exception& e) {
    throw Error(std::string("cgroup: bad cgroup entry in state: ") + e.what());
  }
  // These directories get rmdir'ed: never anything outside cgroupfs.
  auto check = [](const std::string& d) {
    if (d.rfind(kRoot + "/", 0) != 0 || d.find("/../") != std::string::npos ||
        (d.size() >= 3 && d.substr(d.size() - 3) == "/.."))
      throw Error("cgroup: state names a cgroup directory outside " + kRoot + ": " + d);
  };
  for (const auto& [_, d] : cg.dirs_) check(d);
  for (const auto& d : cg.created_) check(d);
  return cg;
}

std::string Cgroup::path_for(const std::string& controller) const {
  if (layout_ == Layout::V2) {
    auto it = dirs_.find("unified");
    return it == dirs_.end() ? "" : it->second;
  }
  auto it = dirs_.find(controller);
  return it == dirs_.end() ? "" : it->second;
}

void Cgroup::add_process(pid_t pid) const {
  for (const auto& dir : unique_dirs(dirs_)) fs::write(dir, "cgroup.procs", std::to_string(pid));
}

void Cgroup::join_v1_as_single_thread() const {
  std::string unified = path_for("unified");
  for (const auto& dir : unique_dirs(dirs_))
    if (dir != unified) fs::write(dir, "tasks", "0");
}

UniqueFd Cgroup::open_unified_dir() const {
  std::string unified = path_for("unified");
  if (unified.empty()) return {};
  UniqueFd fd(::open(unified.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
  if (!fd) throw_errno("cgroup: open " + unified);
  return fd;
}

void Cgroup::add_process_to_unified(pid_t pid) const {
  std::string unified = path_for("unified");
  if (!unified.empty()) fs::write(unified, "cgroup.procs", std::to_string(pid));
}

void Cgroup::apply(const spec::Resources& res) const {
  std::string unified = path_for("unified");
  switch (layout_) {
    case Layout::V2:
      v2::apply(unified, res, /*pure=*/true, /*hugetlb_here=*/true);
      break;
    case Layout::Hybrid:
      v1::apply(dirs_, res);
      if (!unified.empty()) {
        v2::apply(unified, res, /*pure=*/false, /*hugetlb_here=*/!dirs_.count("hugetlb"));
      } else if (!res.unified.empty()) {
        throw Error("cgroup: linux.resources.unified needs cgroup v2 (no unified hierarchy)");
      }
      break;
    case Layout::V1:
      if (!res.unified.empty())
        throw Error("cgroup: linux.resources.unified needs cgroup v2 (this host has only v1)");
      if (!res.hugepage_limits.empty() && !dirs_.count("hugetlb"))
        throw Error("cgroup: linux.resources.hugepageLimits is set but the hugetlb controller "
                    "is not mounted");
      v1::apply(dirs_, res);
      break;
  }
}

namespace {
std::string freezer_dir(const Cgroup& cg) {
  std::string d = cg.path_for(cg.layout() == Layout::V2 ? "unified" : "freezer");
  if (d.empty()) throw Error("cgroup: cannot pause: the freezer controller is not mounted");
  return d;
}
}  // namespace

void Cgroup::freeze() const {
  if (layout_ == Layout::V2)
    v2::set_frozen(freezer_dir(*this), true);
  else
    v1::set_frozen(freezer_dir(*this), true);
}

void Cgroup::thaw() const {
  if (layout_ == Layout::V2)
    v2::set_frozen(freezer_dir(*this), false);
  else
    v1::set_frozen(freezer_dir(*this), false);
}

bool Cgroup::frozen() const {
  return layout_ == Layout::V2 ? v2::frozen(freezer_dir(*this)) : v1::frozen(freezer_dir(*this));
}

std::vector<pid_t> Cgroup::pids() const {
  std::string dir;
  for (const char* c : {"unified", "pids", "freezer", "memory"}) {
    dir = path_for(c);
    if (!dir.empty()) break;
  }
  if (dir.empty() && !dirs_.empty()) dir = dirs_.begin()->second;
  std::vector<pid_t> out;
  if (!dir.empty()) collect_procs(dir, out);
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

bool Cgroup::has_children() const {
  for (const auto& [controller, dir] : dirs_) {
    auto subs = child_dirs(dir);
    if (!subs) throw_errno("cgroup: listing " + dir);
    if (!subs->empty()) return true;
  }
  return false;
}

void Cgroup::kill_all() const {
  auto tasks = pids();
  if (tasks.empty()) return;
  for (pid_t p : tasks) ::kill(p, SIGKILL);
  if (!path_for(layout_ == Layout::V2 ? "unified" : "freezer").empty()) thaw();
}

nlohmann::json Cgroup::stats() const {
  if (layout_ == Layout::V2) return v2::stats(path_for("unified"));
  auto s = v1::stats(dirs_);
  if (!dirs_.count("hugetlb") && !path_for("unified").empty())
    v2::add_hugetlb_stats(path_for("unified"), s["hugetlb"]);
  return s;
}

void Cgroup::destroy() {
  std::string first_error;
  auto attempt = [&](auto&& fn) {
    try {
      fn();
    } catch (const Error& e) {
      if (first_error.empty()) first_error = e.what();
    }
  };
  // The container's own directories, with anything nested below them. One
  // second in all for exiting tasks to leave, not one per hierarchy.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(1);
  for (const auto& dir : unique_dirs(dirs_)) attempt([&] { fs::remove_dir(dir, deadline); });
  // Parents we made: only if no one else has put a cgroup there meanwhile.
  for (auto it = created_.rbegin(); it != created_.rend(); ++it) {
    if (::rmdir(it->c_str()) != 0 && errno != ENOENT && errno != ENOTEMPTY && errno != EBUSY)
      attempt([&] { throw_errno("cgroup: rmdir " + *it); });
  }
  if (!first_error.empty()) throw Error(first_error);
}

}  // namespace crx::cgroup
