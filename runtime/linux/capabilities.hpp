// The five capability sets of process.capabilities, applied with libcap.
//
// Order in the container child (as runc does; finalize_process() in
// process_security.hpp runs exactly this sequence):
//   1. drop_bounding_set(caps)      while still privileged (needs CAP_SETPCAP)
//   2. keep_capabilities(true)      PR_SET_KEEPCAPS, so setuid keeps permitted
//   3. set_user(user)               user.hpp: setgroups, setresgid, setresuid
//   4. keep_capabilities(false)
//   5. apply_capabilities(caps)     capset of effective/permitted/inheritable,
//                                   then the ambient set
// No capabilities object (nullopt) leaves the sets alone: the kernel's
// setuid rules apply (a non-root user ends up with none).
#pragma once
#include <string>
#include <vector>

#include "spec/spec.hpp"

namespace crx::linux_ {

// Drops every capability not listed in caps.bounding from the bounding set.
void drop_bounding_set(const spec::Capabilities& caps);
void keep_capabilities(bool keep);
// Sets effective, permitted and inheritable in one capset, then clears the
// ambient set and raises the listed ambient capabilities. An ambient one
// that is not also permitted and inheritable is skipped with a warning, as
// runc does (its default spec lists ambient caps without inheritable ones).
void apply_capabilities(const spec::Capabilities& caps);

// "CAP_SYS_ADMIN" for 21; the number as text when libcap has no name.
std::string capability_name(int cap);
// Highest capability number the running kernel knows.
int last_capability();

}  // namespace crx::linux_
