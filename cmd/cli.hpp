// Shared plumbing of the crx command line: every cmd_<name>.cpp registers
// one subcommand on the CLI11 app and leaves its action in Cli::action.
#pragma once
#include <CLI/CLI.hpp>
#include <functional>
#include <optional>
#include <string>

#include "container/create.hpp"

namespace crx::cmd {

struct Cli {
  CLI::App app{"crx: an OCI container runtime that live-migrates containers, RDMA included", "crx"};
  container::GlobalOptions global;
  std::string log_path;
  std::string log_format = "text";
  bool debug = false;
  std::string criu_path;  // --criu: the migration commands run this criu (use_criu_binary)
  std::string rootless;
  // Set by the chosen subcommand's callback; returns the exit status.
  std::function<int()> action;
};

// Each command file defines one of these; commands.cpp lists them all.
void register_create(Cli&);
void register_start(Cli&);
void register_run(Cli&);
void register_state(Cli&);
void register_kill(Cli&);
void register_delete(Cli&);
void register_list(Cli&);
void register_spec(Cli&);
void register_features(Cli&);
void register_exec(Cli&);
void register_ps(Cli&);
void register_pause(Cli&);
void register_resume(Cli&);
void register_update(Cli&);
void register_events(Cli&);

// Exec crx-migrate with the same argv if the subcommand is a migration
// command this executable does not have (in crx); returns otherwise.
void forward_if_elsewhere(const std::vector<std::string>& args, char** argv);

// crx's global flags (--root, --log, ..., -v/--version). args: the
// normalized command line, kept by the caller (--version reads --criu).
void add_global_options(Cli& cli, const std::vector<std::string>& args);

// Adds the subcommand being run (all of them for help and errors).
void register_commands(Cli& cli, const std::vector<std::string>& args);

// Whether a flag (long or short name, no dashes) of a command ("" for a
// global flag) takes a value; nullopt for a flag dispatch.cpp's tables
// do not know.
std::optional<bool> flag_takes_value(const std::string& name, const std::string& command);

// Index in normalized args of the subcommand name, if there is one.
std::optional<size_t> subcommand_index(const std::vector<std::string>& args);

// urfave/cli (runc) accepts "-flag" as well as "--flag"; go-runc sends
// "-no-subreaper". Rewrites single-dash long flags crx knows to "--flag".
std::vector<std::string> normalize_args(int argc, char** argv);

}  // namespace crx::cmd
