// Only in the `crx` executable: checkpoint, restore, migrate, receive and
// rdma live in `crx-migrate` (CRIU RPC, crypto, YAML config), so the binary
// containerd runs for every container stays small and starts fast. crx
// hands those commands over by exec'ing crx-migrate with the same argv;
// output, flags and exit codes are crx-migrate's, which has every command.
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

#include "cli.hpp"
#include "common/fs.hpp"

namespace crx::cmd {

namespace {

constexpr const char* kHelper = "crx-migrate";

struct Forwarded {
  const char* name;
  const char* description;
};

// The descriptions must match the ones in cmd_<name>.cpp (crx --help).
constexpr Forwarded kForwarded[] = {
    {"checkpoint", "checkpoint a running container (CRIU)"},
    {"restore", "restore a container from a checkpoint (CRIU)"},
    {"migrate", "live-migrate a container to `crx receive` on another host"},
    {"receive", "receive live-migrated containers"},
    {"rdma", "set up and show this node's SoftRoCE for migration (crx's rdma_rxe)"},
};

[[noreturn]] void exec_helper(const std::string& command, char** argv) {
  std::string dir = executable_directory();
  if (!dir.empty()) {
    std::string next_to_us = dir + "/" + kHelper;
    ::execv(next_to_us.c_str(), argv);
    if (errno != ENOENT) {
      std::fprintf(stderr, "crx: exec %s: %s\n", next_to_us.c_str(), std::strerror(errno));
      ::_exit(1);
    }
  }
  ::execvp(kHelper, argv);  // not installed next to crx: try $PATH
  std::fprintf(stderr, "crx: %s needs %s next to crx or in $PATH: %s\n", command.c_str(), kHelper,
               std::strerror(errno));
  ::_exit(1);
}

}  // namespace

bool is_forwarded_command(const std::string& name) {
  for (const auto& f : kForwarded)
    if (name == f.name) return true;
  return false;
}

void forward_if_elsewhere(const std::vector<std::string>& args, char** argv) {
  auto index = subcommand_index(args);
  if (!index || !is_forwarded_command(args[*index])) return;
  exec_helper(args[*index], argv);
}

// Listed in `crx --help`; never run: forward_if_elsewhere() hands the
// command over before the command line is parsed.
void register_extra_commands(Cli& cli) {
  for (const auto& f : kForwarded) cli.app.add_subcommand(f.name, f.description)->allow_extras();
}

}  // namespace crx::cmd
