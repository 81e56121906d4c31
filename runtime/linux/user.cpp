#include "linux/user.hpp"

#include <grp.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <fstream>

#include "common/error.hpp"

namespace crx::linux_ {

bool setgroups_allowed() {
  std::ifstream in("/proc/self/setgroups");
  std::string word;
  if (!(in >> word)) return true;
  return word != "deny";
}

void set_user(const spec::User& user) {
  const auto& gids = user.additional_gids;
  if (setgroups_allowed()) {
    std::vector<gid_t> groups(gids.begin(), gids.end());
    if (::setgroups(groups.size(), groups.data()) < 0)
      throw_errno("user: setgroups(additionalGids)");
  } else if (!gids.empty()) {
    throw Error(
        "user: additionalGids cannot be set: setgroups is denied in this user namespace");
  }
  if (::setresgid(user.gid, user.gid, user.gid) < 0)
    throw_errno("user: setresgid(" + std::to_string(user.gid) + ")");
  if (::setresuid(user.uid, user.uid, user.uid) < 0)
    throw_errno("user: setresuid(" + std::to_string(user.uid) + ")");
}

void apply_umask(const spec::User& user) {
  ::umask(static_cast<mode_t>(user.umask.value_or(022) & 07777));
}

}  // namespace crx::linux_
