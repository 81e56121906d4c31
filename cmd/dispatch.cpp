// The command line before CLI11 sees it: runc-style single-dash long flags,
// where the subcommand is, and registering only the command being run.
#include <cstdio>
#include <optional>

#include "cli.hpp"
#include "commands.hpp"
#include "version.hpp"

namespace crx::cmd {

namespace {

// Every flag of every command, and whether it takes a value. Only the
// command line up to the container id is scanned with it: a single-dash
// long flag there becomes "--flag" (runc's urfave/cli takes both), and the
// value of a flag is not mistaken for the subcommand or the id.
// args_test.cpp checks it against the options the commands register.
struct Flag {
  const char* name;
  bool value;
  const char* command = nullptr;  // only for this command (else any)
};

constexpr Flag kFlags[] = {
    // global
    {"root", true}, {"log", true}, {"log-format", true}, {"debug", false},
    {"systemd-cgroup", false}, {"criu", true}, {"rootless", true}, {"version", false},
    {"v", false}, {"help", false}, {"h", false},
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
    {"pre-copy", true}, {"min-shrink", true}, {"timeout", true}, {"send-rootfs", false},
    {"once", false}, {"insecure-plaintext", false},
    // a name that means something else for one command
    {"f", false, "delete"}, {"rootless", false, "spec"},
};

// command: the subcommand the flag follows ("" before it: a global flag)
const Flag* find_flag(const std::string& name, const std::string& command) {
  const Flag* any = nullptr;
  for (const auto& f : kFlags) {
    if (name != f.name) continue;
    if (f.command && command == f.command) return &f;
    if (!f.command) any = &f;
  }
  return any;
}

bool takes_value(const std::string& name, const std::string& command) {
  const Flag* f = find_flag(name, command);
  return f && f->value;
}

// The flag name of a "-x", "--name" or "--name=value" argument.
std::string flag_name(const std::string& a) {
  std::string name = a.substr(a[1] == '-' ? 2 : 1);
  return name.substr(0, name.find('='));
}

bool flag_has_inline_value(const std::string& a) { return a.find('=') != std::string::npos; }

}  // namespace

std::optional<bool> flag_takes_value(const std::string& name, const std::string& command) {
  const Flag* f = find_flag(name, command);
  return f ? std::optional<bool>(f->value) : std::nullopt;
}

void add_global_options(Cli& cli, const std::vector<std::string>& args) {
  auto& app = cli.app;
  app.set_version_flag("-v,--version", [&args] { return version_text(criu_from_args(args)); },
                       "print the version, commit, spec, libseccomp and CRIU versions and exit");
  app.add_option("--root", cli.global.root, "root directory for container state")->default_val("/run/crx");
  app.add_option("--log", cli.log_path, "log file (default stderr)");
  app.add_option("--log-format", cli.log_format, "text or json")->check(CLI::IsMember({"text", "json"}));
  app.add_flag("--debug", cli.debug, "debug logging");
  app.add_flag("--systemd-cgroup", cli.global.systemd_cgroup, "use systemd cgroups (slice:prefix:name)");
  app.add_option("--criu", cli.criu_path, "path to criu (accepted for runc compatibility)");
  app.add_option("--rootless", cli.rootless, "accepted for runc compatibility");
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

