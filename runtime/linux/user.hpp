// The process identity of process.user: supplementary groups, gid, uid and
// umask. Runs in the container child after the bounding-set drop and with
// PR_SET_KEEPCAPS set (see capabilities.hpp for the order).
#pragma once
#include <string>

#include "spec/spec.hpp"

namespace crx::linux_ {

// setgroups(additionalGids) unless /proc/self/setgroups says "deny" (a user
// namespace whose mapping was written without setgroups; additional gids are
// an error then), then setresgid(gid) and setresuid(uid).
void set_user(const spec::User& user);
// umask(user.umask) when given; runc's default 0022 otherwise.
void apply_umask(const spec::User& user);

// True when /proc/self/setgroups allows setgroups (absent file = allowed).
bool setgroups_allowed();

}  // namespace crx::linux_
