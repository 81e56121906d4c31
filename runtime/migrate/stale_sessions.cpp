#include "migrate/stale_sessions.hpp"

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include "checkpoint/restore_guard.hpp"
#include "common/error.hpp"
#include "common/fs.hpp"
#include "container/lifecycle.hpp"
#include "state/store.hpp"

namespace crx::migrate {
namespace {

constexpr const char* kMarker = "/receiver.json";

// The container the dead receiver was restoring, if it is still the one it
// made: no state.json (killed mid-restore) or created after the session
// began (restored and held for the commit).
bool made_by_session(const std::string& state_dir, const std::string& began) {
  std::string text;
  try {
    text = read_file(state_dir + "/state.json");
  } catch (const Error&) {
    return true;
  }
  auto j = nlohmann::json::parse(text, nullptr, false);
  if (j.is_discarded()) return true;
  std::string created = j.value("created", "");
  return !began.empty() && created >= began;
}

}  // namespace

void write_session_marker(const std::string& session_dir, const std::string& id, bool committed,
                          const std::string& began) {
  pid_t self = ::getpid();
  nlohmann::json j = {{"pid", self},
                      {"start", state::process_start_time(self)},
                      {"id", id},
                      {"began", began},
                      {"committed", committed}};
  write_file_atomic(session_dir + kMarker, j.dump());
}

std::vector<std::string> sweep_stale_sessions(const std::string& image_root,
                                              const container::GlobalOptions& g) {
  std::vector<std::string> done;
  std::vector<std::string> dirs;
  if (DIR* d = ::opendir(image_root.c_str())) {
    while (struct dirent* e = ::readdir(d)) {
      std::string name = e->d_name;
      if (name != "." && name != "..") dirs.push_back(image_root + "/" + name);
    }
    ::closedir(d);
  }
  for (const auto& dir : dirs) {
    std::string text;
    try {
      text = read_file(dir + kMarker);
    } catch (const Error&) {
      continue;  // not a receiver's session (a sender's, or not ours)
    }
    auto j = nlohmann::json::parse(text, nullptr, false);
    if (j.is_discarded() || !j.is_object()) continue;
    auto pid = j.value("pid", 0);
    if (pid > 0 && state::process_alive(pid, j.value("start", uint64_t{0}))) continue;
    std::string id = j.value("id", "");
    bool committed = j.value("committed", false);
    std::string state_dir = id.empty() ? "" : g.root + "/" + id;
    struct stat st{};
    bool made = !state_dir.empty() && ::stat(state_dir.c_str(), &st) == 0 &&
                made_by_session(state_dir, j.value("began", ""));
    // Tasks CRIU was restoring from this session's images can never finish
    // (their criu is gone), committed or not; the cgroup the restore made
    // goes with them when the container is this session's and uncommitted.
    for (auto& line : checkpoint::remove_unfinished_restore(!committed && made ? state_dir : "", dir))
      done.push_back(std::move(line));
    if (!committed && made) {
      try {
        container::delete_container(g, id, true);
        done.push_back("deleted " + id + ", which a receiver that died had restored but not committed");
      } catch (const std::exception& e) {
        done.push_back("could not delete " + id + " left by a receiver that died: " + e.what());
      }
    }
    try {
      // CRIU killed mid-restore leaves its cgroup yard (tmpfs and cgroup
      // mounts) in the work dir.
      state::detach_mounts_below(dir);
      remove_tree(dir);
      done.push_back("removed " + dir + " (a receiver that died)");
    } catch (const std::exception& e) {
      done.push_back(e.what());
    }
  }
  return done;
}

}  // namespace crx::migrate
