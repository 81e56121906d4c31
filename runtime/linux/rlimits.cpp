#include "linux/rlimits.hpp"

#include <sys/prctl.h>
#include <sys/resource.h>

#include <string>

#include "common/error.hpp"
#include "linux/sysctl.hpp"

namespace crx::linux_ {

void apply_rlimits(const std::vector<spec::Rlimit>& rlimits) {
  for (const auto& r : rlimits) {
    const std::string name = r.type.empty() ? "rlimit " + std::to_string(r.resource) : r.type;
    if (r.soft > r.hard)
      throw Error("rlimits: " + name + ": soft limit " + std::to_string(r.soft) +
                  " is above hard limit " + std::to_string(r.hard));
    rlimit limit{};
    limit.rlim_cur = static_cast<rlim_t>(r.soft);
    limit.rlim_max = static_cast<rlim_t>(r.hard);
    if (::setrlimit(static_cast<__rlimit_resource_t>(r.resource), &limit) < 0)
      throw_errno("rlimits: set " + name + " to " + std::to_string(r.soft) + "/" +
                  std::to_string(r.hard));
  }
}

void write_oom_score_adj(int score, int pid) {
  if (score < -1000 || score > 1000)
    throw Error("oomScoreAdj " + std::to_string(score) + " is outside -1000..1000");
  const std::string path =
      "/proc/" + (pid == 0 ? std::string("self") : std::to_string(pid)) + "/oom_score_adj";
  write_proc_file(path, std::to_string(score));
}

void set_no_new_privs() {
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) throw_errno("prctl(PR_SET_NO_NEW_PRIVS)");
}

}  // namespace crx::linux_
