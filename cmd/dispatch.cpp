// The command line before CLI11 sees it: runc-style single-dash long flags,
// where the subcommand is, and registering only the command being run;
// crx's global flags, declared once for CLI11 and for that scan.
#include <algorithm>
#include <cstdio>
#include <optional>
#include <string_view>

#include "cli.hpp"
#include "commands.hpp"
#include "version.hpp"

namespace crx::cmd {

namespace {

// crx's global flags (runc's), declared once: add_global_options()
// registers them with CLI11, and the scan below reads their names and
// whether they take a value from here. CLI11 matches them before the
// subcommand or after it (fallthrough), as runc does.
enum class Kind {
  Help,     // CLI11's help flag
  Version,  // -v/--version: prints version_text() and exits
  Option,   // takes a value
  Flag,     // takes none
};

struct GlobalFlag {
  Kind kind;
  const char* names;  // as CLI11 takes them: "--root", "-v,--version"
  const char* help;
  std::string* (*value)(Cli&) = nullptr;  // Option: where the value goes
  bool* (*set)(Cli&) = nullptr;           // Flag: what it sets
  const char* default_value = nullptr;    // Option: shown by --help
  std::vector<std::string> choices = {};  // Option: the values it accepts (any if empty)
};

const GlobalFlag kGlobalFlags[] = {
    {Kind::Help, "-h,--help", "Print this help message and exit"},
    {Kind::Version, "-v,--version",
     "print the version, commit, spec, libseccomp and CRIU versions and exit"},
    {Kind::Option, "--root", "root directory for container state",
     [](Cli& c) { return &c.global.root; }, nullptr, "/run/crx"},
    {Kind::Option, "--log", "log file (default stderr)", [](Cli& c) { return &c.log_path; }},
    {Kind::Option, "--log-format", "text or json", [](Cli& c) { return &c.log_format; }, nullptr,
     nullptr, {"text", "json"}},
    {Kind::Flag, "--debug", "debug logging", nullptr, [](Cli& c) { return &c.debug; }},
    {Kind::Flag, "--systemd-cgroup", "use systemd cgroups (slice:prefix:name)", nullptr,
     [](Cli& c) { return &c.global.systemd_cgroup; }},
    {Kind::Option, "--criu", "path to the criu binary (default: criu from PATH)",
     [](Cli& c) { return &c.criu_path; }},
    {Kind::Option, "--rootless", "accepted for runc compatibility",
     [](Cli& c) { return &c.rootless; }},
};

// Whether name (no dashes) is one of a GlobalFlag's names ("-v,--version").
bool names_include(std::string_view names, std::string_view name) {
  while (!names.empty()) {
    size_t comma = names.find(',');
    std::string_view one = names.substr(0, comma);
    one.remove_prefix(std::min(one.find_first_not_of('-'), one.size()));
    if (one == name) return true;
    if (comma == std::string_view::npos) break;
    names.remove_prefix(comma + 1);
  }
  return false;
}

// The flags of the commands, and whether they take a value. Only the
// command line up to the container id is scanned with them and with the
// global flags: a single-dash long flag there becomes "--flag" (runc's
// urfave/cli takes both), and the value of a flag is not mistaken for the
// subcommand or the id. cmd_args_test checks them against the options the
// commands register.
struct Flag {
  const char* name;
  bool value;
  const char* command = nullptr;  // only for this command (else any)
};

constexpr Flag kCommandFlags[] = {
    // create, run, exec, start, delete, kill, list, ps, state, events, update, spec
    {"bundle", true}, {"b", true}, {"pid-file", true}, {"console-socket", true},
    {"no-pivot", false}, {"no-new-keyring", false}, {"preserve-fds", true}, {"detach", false},
    {"d", false}, {"force", false}, {"all", false}, {"a", false}, {"format", true}, {"f", true},
    {"quiet", false}, {"q", false}, {"no-subreaper", false}, {"keep", false}, {"process", true},
    {"p", true}, {"tty", false}, {"t", false}, {"cwd", true}, {"env", true}, {"e", true},
    {"user", true}, {"u", true}, {"cap", true}, {"c", true}, {"no-new-privs", false},
    {"apparmor", true}, {"process-label", true}, {"additional-gids", true}, {"g", true},
    {"stats", false}, {"interval", true}, {"resources", true}, {"r", true},
    {"ignore-paused", false}, {"cgroup", true},
    // update
    {"blkio-weight", true}, {"cpu-period", true}, {"cpu-quota", true}, {"cpu-rt-period", true},
    {"cpu-rt-runtime", true}, {"cpu-shares", true}, {"cpuset-cpus", true}, {"cpuset-mems", true},
    {"kernel-memory", true}, {"kernel-memory-tcp", true}, {"l3-cache-schema", true},
    {"mem-bw-schema", true}, {"memory", true}, {"memory-reservation", true}, {"memory-swap", true},
    {"pids-limit", true},
    // checkpoint, restore (runc's CRIU flags)
    {"image-path", true}, {"work-path", true}, {"leave-running", false},
    {"tcp-established", false}, {"ext-unix-sk", false}, {"shell-job", false},
    {"file-locks", false}, {"pre-dump", false}, {"parent-path", true}, {"page-server", true},
    {"lazy-pages", false}, {"status-fd", true}, {"manage-cgroups-mode", true},
    {"empty-ns", true}, {"auto-dedup", false}, {"kill-exec", false},
    // migrate, receive, rdma
    {"to", true}, {"listen", true}, {"key", true}, {"config", true}, {"image-dir", true},
    {"pre-copy", true}, {"min-shrink", true}, {"on-freeze", true}, {"timeout", true},
    {"send-rootfs", false}, {"lazy", false}, {"no-page-dedup", false}, {"no-page-compression", false}, {"pre-dump-mode", true}, {"once", false}, {"insecure-plaintext", false}, {"tls-cert", true}, {"tls-key", true},
    {"tls-ca", true}, {"tls-peer-name", true}, {"tls-cipher", true},
    // a name that means something else for one command
    {"f", false, "delete"}, {"rootless", false, "spec"},
};

// Whether flag name (no dashes) takes a value, if crx has such a flag.
// command: the subcommand the flag follows ("" before it: a global flag).
std::optional<bool> find_flag(const std::string& name, const std::string& command) {
  std::optional<bool> any;
  for (const auto& g : kGlobalFlags)
    if (names_include(g.names, name)) any = g.kind == Kind::Option;
  for (const auto& f : kCommandFlags) {
    if (name != f.name) continue;
    if (f.command && command == f.command) return f.value;
    if (!f.command) any = f.value;
  }
  return any;
}

bool takes_value(const std::string& name, const std::string& command) {
  return find_flag(name, command).value_or(false);
}

// The flag name of a "-x", "--name" or "--name=value" argument.
std::string flag_name(const std::string& a) {
  std::string name = a.substr(a[1] == '-' ? 2 : 1);
  return name.substr(0, name.find('='));
}

bool flag_has_inline_value(const std::string& a) { return a.find('=') != std::string::npos; }

}  // namespace

std::optional<bool> flag_takes_value(const std::string& name, const std::string& command) {
  return find_flag(name, command);
}

void add_global_options(Cli& cli, const std::vector<std::string>& args) {
  auto& app = cli.app;
  for (const auto& g : kGlobalFlags) {
    switch (g.kind) {
      case Kind::Help:
        app.set_help_flag(g.names, g.help);
        break;
      case Kind::Version:
        app.set_version_flag(g.names, [&args] { return version_text(criu_from_args(args)); }, g.help);
        break;
      case Kind::Option: {
        CLI::Option* o = app.add_option(g.names, *g.value(cli), g.help);
        if (g.default_value) o->default_val(g.default_value);
        if (!g.choices.empty()) o->check(CLI::IsMember(g.choices));
        break;
      }
      case Kind::Flag:
        app.add_flag(g.names, *g.set(cli), g.help);
        break;
    }
  }
  app.require_subcommand(1);
  app.fallthrough();
}

// Builds only the subcommand being run when this executable has it: CLI11
// makes every option object up front, and containerd runs crx many times
// per container. Help, errors and unknown commands get them all.
void register_commands(Cli& cli, const std::vector<std::string>& args) {
  if (auto index = subcommand_index(args)) {
    const Command* c = find_command(args[*index]);
    if (c && c->add) return c->add(cli);
  }
  for (const auto& c : commands()) {
    if (c.add) {
      c.add(cli);
    } else {
      add_forwarded(cli, c);
    }
  }
}

std::optional<size_t> subcommand_index(const std::vector<std::string>& args) {
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "--") return std::nullopt;
    if (a.size() < 2 || a[0] != '-') return i;
    if (!flag_has_inline_value(a) && takes_value(flag_name(a), "")) ++i;
  }
  return std::nullopt;
}

std::vector<std::string> normalize_args(int argc, char** argv) {
  std::vector<std::string> out(argv + 1, argv + argc);
  // Rewrite up to the container id: what follows it (exec's command, ps
  // options, a signal) belongs to someone else.
  std::string command;  // the subcommand, once seen
  for (size_t i = 0; i < out.size(); ++i) {
    std::string& a = out[i];
    if (a == "--") break;
    if (a.size() < 2 || a[0] != '-') {
      if (!command.empty()) break;  // the container id
      command = a;
      continue;
    }
    std::string name = flag_name(a);
    bool has_value = flag_has_inline_value(a);
    if (a[1] != '-' && name.size() > 1 && find_flag(name, command)) a = "-" + a;
    if (!has_value && takes_value(name, command)) ++i;
  }
  return out;
}

}  // namespace crx::cmd

