#include "commands.hpp"

#include <cstdlib>

namespace crx::cmd {

// Defined in cmd_<name>.cpp, linked into crx-migrate only: weak here, so
// that in crx they are null and the table says "forward it".
void register_checkpoint(Cli&) __attribute__((weak));
void register_restore(Cli&) __attribute__((weak));
void register_migrate(Cli&) __attribute__((weak));
void register_receive(Cli&) __attribute__((weak));
void register_rdma(Cli&) __attribute__((weak));

namespace {

// In `crx --help` order.
const Command kCommands[] = {
    {"create", "create a container", register_create, false},
    {"start", "start a created container", register_start, false},
    {"run", "create and start a container", register_run, false},
    {"state", "print the state of a container", register_state, false},
    {"kill", "send a signal to the container's init (or all its processes)", register_kill, false},
    {"delete", "delete a container", register_delete, false},
    {"list", "list containers", register_list, false},
    {"spec", "write a default config.json", register_spec, false},
    {"features", "print what this runtime supports (JSON)", register_features, false},
    {"exec", "execute a new process inside a running container", register_exec, false},
    {"ps", "list the processes of a container; extra args go to ps(1)", register_ps, false},
    {"pause", "suspend all processes of a container (cgroup freezer)", register_pause, false},
    {"resume", "resume all processes of a paused container", register_resume, false},
    {"update", "update the resource limits of a container", register_update, false},
    {"events", "stats and OOM events of a container, as JSON lines", register_events, false},
    {"checkpoint", "checkpoint a running container (CRIU)", register_checkpoint, true},
    {"restore", "restore a container from a checkpoint (CRIU)", register_restore, true},
    {"migrate", "live-migrate a container to `crx receive` on another host", register_migrate, true},
    {"receive", "receive live-migrated containers", register_receive, true},
    {"rdma", "set up and show this node's SoftRoCE for migration (crx's rdma_rxe)", register_rdma,
     true},
};

}  // namespace

std::span<const Command> commands() { return kCommands; }

const Command* find_command(std::string_view name) {
  for (const auto& c : kCommands)
    if (name == c.name) return &c;
  return nullptr;
}

CLI::App* add_command(Cli& cli, std::string_view name) {
  const Command* c = find_command(name);
  if (!c) std::abort();  // a command file whose name is not in the table
  return cli.app.add_subcommand(c->name, c->description);
}

void add_forwarded(Cli& cli, const Command& c) {
  cli.app.add_subcommand(c.name, c.description)->allow_extras();
}

}  // namespace crx::cmd
