// The migration commands (checkpoint, restore, migrate, receive, rdma) live
// in `crx-migrate` (CRIU RPC, crypto, YAML config), so the binary containerd
// runs for every container stays small and starts fast. `crx` hands those
// commands over by exec'ing crx-migrate with the same argv; output, flags
// and exit codes are crx-migrate's, which has every command. Which commands
// those are is the table's (commands.cpp): the ones this executable lacks.
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

#include "cli.hpp"
#include "commands.hpp"
#include "common/fs.hpp"

namespace crx::cmd {

namespace {

constexpr const char* kHelper = "crx-migrate";

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

void forward_if_elsewhere(const std::vector<std::string>& args, char** argv) {
  auto index = subcommand_index(args);
  if (!index) return;
  const Command* c = find_command(args[*index]);
  if (c && !c->add) exec_helper(c->name, argv);
}

}  // namespace crx::cmd
