#include "state/store.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <ctime>
#include <sstream>

#include "common/error.hpp"
#include "common/fs.hpp"
#include "common/retry_eintr.hpp"
#include "state/id.hpp"

namespace crx::state {

const char* to_string(Status s) {
  switch (s) {
    case Status::Creating: return "creating";
    case Status::Created: return "created";
    case Status::Running: return "running";
    case Status::Paused: return "paused";
    case Status::Stopped: return "stopped";
  }
  return "unknown";
}

nlohmann::json ContainerState::to_json() const {
  return {{"id", id},
          {"bundle", bundle},
          {"rootfs", rootfs},
          {"created", created},
          {"owner", owner},
          {"pid", pid},
          {"pid_start_time", pid_start_time},
          {"annotations", annotations},
          {"cgroup", cgroup},
          {"config", config},
          {"systemd_cgroup", systemd_cgroup},
          {"created_with_userns", created_with_userns},
          {"pid_file", pid_file}};
}

ContainerState ContainerState::from_json(const nlohmann::json& j) {
  if (!j.is_object()) throw Error("not a JSON object");
  ContainerState st;
  // nlohmann's value()/get() throw type_error on a field of another type;
  // a number is taken only as an integer (a float out of range would be
  // an undefined conversion).
  auto integer = [&](const char* key) -> nlohmann::json {
    auto it = j.find(key);
    if (it == j.end()) return 0;
    if (!it->is_number_integer()) throw Error(std::string("\"") + key + "\" is not an integer");
    return *it;
  };
  try {
    st.id = j.value("id", "");
    st.bundle = j.value("bundle", "");
    st.rootfs = j.value("rootfs", "");
    st.created = j.value("created", "");
    st.owner = j.value("owner", "");
    st.pid = integer("pid").get<pid_t>();
    st.pid_start_time = integer("pid_start_time").get<uint64_t>();
    if (j.contains("annotations") && j["annotations"].is_object())
      st.annotations = j["annotations"].get<std::map<std::string, std::string>>();
    st.cgroup = j.value("cgroup", nlohmann::json());
    st.config = j.value("config", nlohmann::json());
    st.systemd_cgroup = j.value("systemd_cgroup", false);
    st.created_with_userns = j.value("created_with_userns", false);
    st.pid_file = j.value("pid_file", "");
  } catch (const nlohmann::json::exception& e) {
    throw Error(std::string("a field has the wrong type: ") + e.what());
  }
  return st;
}

nlohmann::json oci_state_json(const ContainerState& st, Status status) {
  nlohmann::json j{{"ociVersion", "1.1.0"},
                   {"id", st.id},
                   {"pid", status == Status::Stopped ? 0 : st.pid},
                   {"status", to_string(status)},
                   {"bundle", st.bundle},
                   {"rootfs", st.rootfs},
                   {"created", st.created},
                   {"owner", st.owner}};
  if (!st.annotations.empty()) j["annotations"] = st.annotations;
  return j;
}

std::string now_rfc3339() {
  auto now = std::chrono::system_clock::now();
  std::time_t t = std::chrono::system_clock::to_time_t(now);
  long long ns =
      std::chrono::duration_cast<std::chrono::nanoseconds>(now.time_since_epoch()).count() % 1000000000;
  std::tm tm{};
  gmtime_r(&t, &tm);
  char date[40];
  std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%S", &tm);
  char out[64];
  std::snprintf(out, sizeof out, "%s.%09lldZ", date, ns);
  return out;
}

namespace {

// Returns the part of /proc/<pid>/stat after the command name, or "".
std::string stat_tail(pid_t pid) {
  std::string s;
  try {
    s = read_file_if_present("/proc/" + std::to_string(pid) + "/stat").value_or("");
  } catch (const Error& e) {
    if (e.cause() == Cause::NotFound) return "";  // ESRCH while reading: it just exited
    throw;
  }
  auto close = s.rfind(')');
  return close == std::string::npos ? "" : s.substr(close + 2);
}

}  // namespace

uint64_t process_start_time(pid_t pid) {
  if (pid <= 0) return 0;
  std::string tail = stat_tail(pid);  // field 3 (state) is first
  if (tail.empty()) return 0;
  size_t pos = 0;
  for (int field = 3; field < 22; ++field) {
    pos = tail.find(' ', pos);
    if (pos == std::string::npos) return 0;
    ++pos;
  }
  return std::strtoull(tail.c_str() + pos, nullptr, 10);
}

bool process_alive(pid_t pid, uint64_t start_time) {
  if (pid <= 0) return false;
  std::string tail = stat_tail(pid);
  if (tail.empty() || tail[0] == 'Z' || tail[0] == 'X') return false;
  return start_time == 0 || process_start_time(pid) == start_time;
}

namespace {

UniqueFd lock_dir(const std::string& path) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd) throw_errno("open state directory " + path);
  if (retry_eintr([&] { return ::flock(fd.get(), LOCK_EX); }) != 0) throw_errno("lock " + path);
  return fd;
}

}  // namespace

StateDir StateDir::create(const std::string& root, const std::string& id) {
  validate_id(id);
  if (::mkdir(root.c_str(), 0711) != 0 && errno != EEXIST) mkdir_p(root, 0711);
  std::string path = root + "/" + id;
  if (::mkdir(path.c_str(), 0711) != 0) {
    if (errno == EEXIST) throw Error("container with id " + id + " already exists", EEXIST);
    throw_errno("create state directory " + path);
  }
  try {
    return StateDir(path, id, lock_dir(path));
  } catch (...) {
    ::rmdir(path.c_str());
    throw;
  }
}

StateDir StateDir::open(const std::string& root, const std::string& id) {
  validate_id(id);
  std::string path = root + "/" + id;
  struct stat st;
  if (::stat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    throw Error("container " + id + " does not exist", ENOENT);
  UniqueFd lock = lock_dir(path);
  // A concurrent delete may have removed the directory while we waited.
  struct stat locked, now;
  if (::fstat(lock.get(), &locked) != 0 || ::stat(path.c_str(), &now) != 0 || locked.st_ino != now.st_ino ||
      locked.st_nlink == 0)
    throw Error("container " + id + " does not exist", ENOENT);
  return StateDir(path, id, std::move(lock));
}

bool StateDir::has_state() const { return path_exists(path_ + "/state.json"); }
bool StateDir::fifo_exists() const { return path_exists(fifo_path()); }

ContainerState StateDir::load() const {
  std::string text;
  try {
    text = read_file(path_ + "/state.json");
  } catch (const Error& e) {
    if (e.cause() != Cause::NotFound) throw;
    throw Error("container " + id_ + " does not exist (no state.json; half-created? use delete --force)",
                e.sys_errno());
  }
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded()) throw Error("state of container " + id_ + " is corrupt: " + path_ + "/state.json");
  try {
    return ContainerState::from_json(j);
  } catch (const Error& e) {
    throw Error("state of container " + id_ + " is corrupt: " + path_ + "/state.json: " + e.what());
  }
}

void StateDir::save(const ContainerState& st) const {
  write_file_atomic(path_ + "/state.json", st.to_json().dump());
}

namespace {

// A mount point of /proc/self/mountinfo (field 5) with its octal escapes
// (\040 for a space, ...) undone.
std::string unescape_mountinfo(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); i++) {
    if (s[i] == '\\' && i + 3 < s.size()) {
      out += static_cast<char>(std::stoi(s.substr(i + 1, 3), nullptr, 8));
      i += 3;
    } else {
      out += s[i];
    }
  }
  return out;
}

}  // namespace

// Detaches every mount at or below dir, deepest first. A restore that was
// killed (crx receive or crx restore got SIGKILL) leaves its bind mount of
// the rootfs (criu-root) and its staged tmpfs in the state directory:
// removing the tree without this would delete the rootfs's files through
// the bind mount.
void detach_mounts_below(const std::string& dir) {
  std::string text;
  try {
    text = read_file("/proc/self/mountinfo");
  } catch (const Error& e) {
    if (e.cause() == Cause::NotFound) return;  // no /proc: nothing to go by
    throw;
  }
  std::vector<std::string> points;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream f(line);
    std::string id, parent, dev, root, point;
    if (!(f >> id >> parent >> dev >> root >> point)) continue;
    point = unescape_mountinfo(point);
    if (point == dir || point.rfind(dir + "/", 0) == 0) points.push_back(point);
  }
  std::sort(points.begin(), points.end(),
            [](const std::string& a, const std::string& b) { return a.size() > b.size(); });
  for (const auto& p : points) ::umount2(p.c_str(), MNT_DETACH);
}

void StateDir::remove() {
  detach_mounts_below(path_);
  remove_tree(path_);
  lock_.reset();
}

std::vector<std::string> list_ids(const std::string& root) {
  std::vector<std::string> ids;
  DIR* d = ::opendir(root.c_str());
  if (!d) return ids;
  while (dirent* e = ::readdir(d)) {
    std::string name = e->d_name;
    if (name == "." || name == "..") continue;
    struct stat st;
    if (::stat((root + "/" + name).c_str(), &st) == 0 && S_ISDIR(st.st_mode)) ids.push_back(name);
  }
  ::closedir(d);
  std::sort(ids.begin(), ids.end());
  return ids;
}

}  // namespace crx::state
