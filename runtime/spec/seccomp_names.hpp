// Syscall names parse_spec accepts in seccomp profiles.
#pragma once
#include <string>

namespace crx::spec {

// True for kernel syscalls newer than the libseccomp crx is built with
// (e.g. "mseal"): config.json may list them (Docker's profile does), but
// seccomp_syscall_resolve_name() fails, so the filter builder must skip
// them, as runc does, instead of reporting an unknown syscall.
bool syscall_unknown_to_libseccomp(const std::string& name);

}  // namespace crx::spec
