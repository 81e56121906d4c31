// The one list of crx's commands: name, `crx --help` line, the function
// that adds it, and the executable it lives in. `crx` has what containerd
// calls for every container; the migration commands (CRIU, crypto, YAML)
// are linked into `crx-migrate` only, and crx hands them over by exec
// (forward.cpp). Both executables are built from this table.
#pragma once
#include <span>
#include <string_view>

#include "cli.hpp"

namespace crx::cmd {

using Register = void (*)(Cli&);

struct Command {
  const char* name;
  const char* description;
  // Adds the subcommand; null in `crx` for a migration command (a weak
  // reference to a function only crx-migrate links).
  Register add;
  bool migration;  // lives in crx-migrate
};

std::span<const Command> commands();
const Command* find_command(std::string_view name);

// Adds subcommand `name` to the app with its description from the table.
CLI::App* add_command(Cli& cli, std::string_view name);

// A migration command this executable does not have: listed in --help,
// never run (forward_if_elsewhere() execs crx-migrate first).
void add_forwarded(Cli& cli, const Command& c);

}  // namespace crx::cmd
