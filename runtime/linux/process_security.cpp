#include "linux/process_security.hpp"

#include "linux/capabilities.hpp"
#include "linux/lsm.hpp"
#include "linux/rlimits.hpp"
#include "linux/user.hpp"

namespace crx::linux_ {

UniqueFd finalize_process(const spec::Process& p, const SeccompFilter* seccomp) {
  UniqueFd notify;
  apply_apparmor_profile(p.apparmor_profile);  // takes effect at execve
  apply_rlimits(p.rlimits);
  if (p.oom_score_adj) write_oom_score_adj(*p.oom_score_adj);
  if (p.no_new_privileges) set_no_new_privs();
  if (seccomp && !seccomp->empty() && !p.no_new_privileges) notify = seccomp->load();

  if (p.capabilities) {
    drop_bounding_set(*p.capabilities);
    keep_capabilities(true);
  }
  set_user(p.user);
  if (p.capabilities) {
    keep_capabilities(false);
    apply_capabilities(*p.capabilities);
  }
  apply_umask(p.user);

  if (seccomp && !seccomp->empty() && p.no_new_privileges) notify = seccomp->load();
  return notify;
}

}  // namespace crx::linux_
