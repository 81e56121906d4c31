// The host's security modules and resctrl, as far as config.json's
// .process.apparmorProfile, .process.selinuxLabel, .linux.mountLabel and
// .linux.intelRdt need them. crx applies an AppArmor profile where AppArmor
// is enabled; it has no SELinux labelling and no resctrl management, and
// refuses what it cannot apply (check_host_support) with runc's words where
// runc refuses the same.
#pragma once
#include <string>

#include "spec/spec.hpp"

namespace crx::linux_ {

bool apparmor_enabled();
bool selinux_enabled();

// Throws crx::Error (Cause::Unsupported) naming the JSON path of the first
// field of spec this host or crx cannot apply.
void check_host_support(const spec::Spec& spec);

// Makes the next execve enter the AppArmor profile (no-op for "" or where
// AppArmor is not enabled: create has refused the profile then).
void apply_apparmor_profile(const std::string& profile);

}  // namespace crx::linux_
