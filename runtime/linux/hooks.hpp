// OCI hooks (prestart, createRuntime, createContainer, startContainer,
// poststart, poststop). Each hook is fork+execve(path, args, env) (no env:
// crx's own environment, as runc's Go exec does; no args: argv = {path}) with the
// container's OCI state JSON on stdin (a sealed memfd, so a hook that never
// reads stdin cannot block crx), stdout discarded and stderr captured for
// the error message. Hooks run one after another; the first failure stops
// the list and throws crx::Error:
//   "hook <phase> <path> exited with status N: <first line of stderr>"
//   "hook <phase> <path> killed by signal SIGX"
//   "hook <phase> <path> timed out after Ns"   (the hook is SIGKILLed)
// For phase "poststop" failures are logged as warnings and the remaining
// hooks still run (runc ignores poststop errors).
// createContainer and startContainer must be called by the container child
// (in the container's namespaces, startContainer after pivot_root).
#pragma once
#include <string>
#include <vector>

#include "spec/spec.hpp"

namespace crx::linux_ {

void run_hooks(const std::vector<spec::Hook>& hooks, const std::string& state_json,
               const std::string& phase);
// One hook; throws on failure whatever the phase.
void run_hook(const spec::Hook& hook, const std::string& state_json, const std::string& phase);

}  // namespace crx::linux_
