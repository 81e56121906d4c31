// `crx --version`, in runc's shape so tools that parse runc's answer
// (docker info, nerdctl, containerd's shim logs) read crx's the same way:
//
//   crx version 0.1.0
//   commit: <git sha of the build, "-dirty" when the tree had changes>
//   spec: 1.1.0
//   libseccomp: 2.5.4
//   criu: 3.17.1            ("criu: not found" when there is none)
//
// runc's fourth line names its Go compiler; crx has none, and adds the
// CRIU that checkpoint/restore/migrate would run instead.
#pragma once
#include <string>
#include <vector>

namespace crx::cmd {

// The version of CRIU at `criu` (a path, or a name looked up in $PATH) as
// `criu --version` reports it ("3.17.1"); "" when it cannot be run.
std::string criu_version_of(const std::string& criu);

// The text above; criu as --criu gave it ("criu" when not given).
std::string version_text(const std::string& criu);

// The value of --criu in normalized args before the subcommand, or "criu".
std::string criu_from_args(const std::vector<std::string>& args);

}  // namespace crx::cmd
