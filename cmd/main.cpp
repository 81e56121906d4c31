// crx entry point: global flags, logging, dispatch, one-line errors.
#include <cstdio>
#include <optional>
#include <set>

#include "cli.hpp"
#include "version.hpp"
#include "common/error.hpp"
#include "common/log.hpp"

namespace crx::cmd {

namespace {

// Flags that take a separate value: the next argument is not positional.
const std::set<std::string>& flags_with_value() {
  static const std::set<std::string> kWithValue = {
      "root", "log", "log-format", "criu", "bundle", "b", "pid-file", "console-socket", "preserve-fds",
      "format", "f", "image-path", "work-path", "parent-path", "page-server", "status-fd",
      "manage-cgroups-mode", "empty-ns", "process", "p", "cwd", "env", "e", "user", "u", "cap", "c",
      "apparmor", "process-label", "additional-gids", "g", "interval", "resources", "r", "to", "listen"};
  return kWithValue;
}

// The flag name of a "-x", "--name" or "--name=value" argument.
std::string flag_name(const std::string& a) {
  std::string name = a.substr(a[1] == '-' ? 2 : 1);
  return name.substr(0, name.find('='));
}

bool flag_has_inline_value(const std::string& a) { return a.find('=') != std::string::npos; }

using Register = void (*)(Cli&);
struct Command {
  const char* name;
  Register add;
};

const Command kCommands[] = {
    {"create", register_create}, {"start", register_start},     {"run", register_run},
    {"state", register_state},   {"kill", register_kill},       {"delete", register_delete},
    {"list", register_list},     {"spec", register_spec},       {"features", register_features},
    {"exec", register_exec},     {"ps", register_ps},           {"pause", register_pause},
    {"resume", register_resume}, {"update", register_update},   {"events", register_events},
};

// Builds only the subcommand being run when it is one of ours: CLI11 makes
// every option object up front, and containerd runs crx many times per
// container. Help, errors and the migration commands get them all.
void register_commands(Cli& cli, const std::vector<std::string>& args) {
  if (auto index = subcommand_index(args)) {
    for (const auto& c : kCommands) {
      if (args[*index] == c.name) return c.add(cli);
    }
  }
  for (const auto& c : kCommands) c.add(cli);
  register_extra_commands(cli);
}

}  // namespace

std::optional<size_t> subcommand_index(const std::vector<std::string>& args) {
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--") return std::nullopt;
    if (a.size() < 2 || a[0] != '-') return i;
    if (!flag_has_inline_value(a) && flags_with_value().count(flag_name(a))) ++i;
  }
  return std::nullopt;
}

std::vector<std::string> normalize_args(int argc, char** argv) {
  static const std::set<std::string> kLong = {
      "root", "log", "log-format", "debug", "systemd-cgroup", "criu", "rootless", "bundle",
      "pid-file", "console-socket", "no-pivot", "no-new-keyring", "preserve-fds", "detach",
      "force", "all", "format", "quiet", "no-subreaper", "keep", "image-path", "work-path",
      "leave-running", "tcp-established", "ext-unix-sk", "shell-job", "file-locks", "pre-dump",
      "parent-path", "page-server", "lazy-pages", "status-fd", "manage-cgroups-mode", "empty-ns",
      "auto-dedup", "process", "tty", "cwd", "env", "user", "cap", "no-new-privs", "apparmor",
      "process-label", "additional-gids", "stats", "interval", "resources", "to", "listen"};
  std::vector<std::string> out(argv + 1, argv + argc);
  // Rewrite up to the container id: what follows it (exec's command, ps
  // options, a signal) belongs to someone else.
  bool seen_subcommand = false;
  for (size_t i = 0; i < out.size(); ++i) {
    std::string& a = out[i];
    if (a == "--") break;
    if (a.size() < 2 || a[0] != '-') {
      if (seen_subcommand) break;  // the container id
      seen_subcommand = true;
      continue;
    }
    std::string name = flag_name(a);
    bool has_value = flag_has_inline_value(a);
    if (a[1] != '-' && name.size() > 1 && kLong.count(name)) a = "-" + a;
    if (!has_value && flags_with_value().count(name)) ++i;
  }
  return out;
}

}  // namespace crx::cmd

int main(int argc, char** argv) {
  using namespace crx;
  auto args = cmd::normalize_args(argc, argv);
  cmd::forward_if_elsewhere(args, argv);  // crx: the migration commands are crx-migrate's
  cmd::Cli cli;
  auto& app = cli.app;
  app.set_version_flag("-v,--version", [&args] { return cmd::version_text(cmd::criu_from_args(args)); },
                       "print the version, commit, spec, libseccomp and CRIU versions and exit");
  app.add_option("--root", cli.global.root, "root directory for container state")->default_val("/run/crx");
  app.add_option("--log", cli.log_path, "log file (default stderr)");
  app.add_option("--log-format", cli.log_format, "text or json")->check(CLI::IsMember({"text", "json"}));
  app.add_flag("--debug", cli.debug, "debug logging");
  app.add_flag("--systemd-cgroup", cli.global.systemd_cgroup, "use systemd cgroups (slice:prefix:name)");
  std::string criu_path;
  app.add_option("--criu", criu_path, "path to criu (accepted for runc compatibility)");
  std::string rootless;
  app.add_option("--rootless", rootless, "accepted for runc compatibility");
  app.require_subcommand(1);
  app.fallthrough();

  cmd::register_commands(cli, args);

  std::vector<std::string> reversed(args.rbegin(), args.rend());
  try {
    app.parse(reversed);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "crx: %s\n", e.what());
    return 1;
  }
  log::configure(cli.log_path, cli.log_format == "json" ? log::Format::Json : log::Format::Text, cli.debug);
  try {
    return cli.action ? cli.action() : 0;
  } catch (const std::exception& e) {
    if (log::has_log_file() || cli.log_format == "json") log::error(e.what());
    if (log::has_log_file() || cli.log_format != "json")
      std::fprintf(stderr, "%scrx: %s\n", log::to_journal() ? "<3>" : "", e.what());
    return 1;
  }
}
