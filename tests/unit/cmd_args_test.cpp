// The command line crx scans before CLI11 (cmd/dispatch.cpp) must know
// every flag the commands register, and whether it takes a value:
// otherwise a flag's value is taken for the subcommand or the container
// id, and a runc-style "-flag" is not rewritten. The global flags come
// from one table that both the scan and CLI11 read; the commands' flags
// are checked here against CLI11's options of every command, so a new
// flag cannot be forgotten. Also: every command of the table is
// registered with the table's name and description, and a global flag
// works before the command and after it, as in runc.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "../../cmd/cli.hpp"
#include "../../cmd/commands.hpp"

namespace {

using crx::cmd::Cli;

void all_commands(Cli& cli, const std::vector<std::string>& args) {
  crx::cmd::add_global_options(cli, args);
  crx::cmd::register_commands(cli, {});
}

// command: the top-level subcommand the options belong to ("" for crx's own)
void check_options(const CLI::App* app, const std::string& where, const std::string& command) {
  for (const CLI::Option* opt : app->get_options()) {
    const bool value = opt->get_items_expected_max() != 0;
    std::vector<std::string> names = opt->get_lnames();
    for (const auto& s : opt->get_snames()) names.push_back(s);
    for (const auto& name : names) {
      auto known = crx::cmd::flag_takes_value(name, command);
      // a short flag without a value cannot be mistaken for anything
      if (name.size() == 1 && !value && !known) continue;
      EXPECT_TRUE(known.has_value()) << where << ": flag " << name
                                     << " is missing from cmd/dispatch.cpp's kCommandFlags";
      if (!known) continue;
      EXPECT_EQ(*known, value) << where << ": flag " << name << (value ? " takes" : " takes no")
                               << " value but cmd/dispatch.cpp says otherwise";
    }
  }
  for (const CLI::App* sub : app->get_subcommands({}))
    check_options(sub, where + " " + sub->get_name(), command.empty() ? sub->get_name() : command);
}

TEST(CmdArgs, TheFlagTableKnowsEveryFlagOfEveryCommand) {
  std::vector<std::string> args;
  Cli cli;
  all_commands(cli, args);
  check_options(&cli.app, "crx", "");
}

TEST(CmdArgs, EveryCommandOfTheTableIsRegisteredUnderItsName) {
  std::vector<std::string> args;
  Cli cli;
  all_commands(cli, args);
  for (const auto& c : crx::cmd::commands()) {
    ASSERT_NE(c.add, nullptr) << c.name << ": the unit tests link every command";
    const CLI::App* sub = nullptr;
    for (const CLI::App* s : cli.app.get_subcommands({}))
      if (s->get_name() == c.name) sub = s;
    ASSERT_NE(sub, nullptr) << c.name;
    EXPECT_EQ(sub->get_description(), c.description) << c.name;
  }
  EXPECT_EQ(cli.app.get_subcommands({}).size(), crx::cmd::commands().size());
}

TEST(CmdArgs, AValueIsNotTakenForTheSubcommand) {
  EXPECT_EQ(crx::cmd::subcommand_index({"--root", "/run/x", "state", "c1"}), 2u);
  EXPECT_EQ(crx::cmd::subcommand_index({"--rootless", "false", "state", "c1"}), 2u);
  EXPECT_EQ(crx::cmd::subcommand_index({"--log=/l", "--debug", "state", "c1"}), 2u);
  EXPECT_EQ(crx::cmd::subcommand_index({"--criu", "/c", "-v"}), std::nullopt);
  EXPECT_EQ(crx::cmd::subcommand_index({"-h", "--log-format", "json", "list"}), 3u);
}

// The command line as main() parses it.
struct Parsed {
  Cli cli;
  bool ok = false;
  explicit Parsed(std::vector<const char*> argv) {
    argv.insert(argv.begin(), "crx");
    auto args = crx::cmd::normalize_args(static_cast<int>(argv.size()), const_cast<char**>(argv.data()));
    crx::cmd::add_global_options(cli, args);
    crx::cmd::register_commands(cli, args);
    std::vector<std::string> reversed(args.rbegin(), args.rend());
    try {
      cli.app.parse(reversed);
      ok = true;
    } catch (const CLI::ParseError& e) {
      ADD_FAILURE() << e.what();
    }
  }
};

TEST(CmdArgs, GlobalFlagsWorkBeforeAndAfterTheCommand) {
  const std::vector<std::vector<const char*>> lines = {
      {"--root", "/r", "--log-format", "json", "--rootless", "false", "--debug", "state", "c1"},
      {"state", "--root", "/r", "--log-format", "json", "--rootless", "false", "--debug", "c1"},
      {"--root=/r", "state", "--log-format=json", "--debug", "--rootless=false", "c1"},
      {"-root", "/r", "-log-format", "json", "state", "-rootless", "false", "-debug", "c1"},
  };
  for (const auto& line : lines) {
    std::string text;
    for (const char* a : line) text += std::string(" ") + a;
    Parsed p(line);
    ASSERT_TRUE(p.ok) << text;
    EXPECT_EQ(p.cli.global.root, "/r") << text;
    EXPECT_EQ(p.cli.log_format, "json") << text;
    EXPECT_EQ(p.cli.rootless, "false") << text;
    EXPECT_TRUE(p.cli.debug) << text;
    EXPECT_FALSE(p.cli.global.systemd_cgroup) << text;
    EXPECT_TRUE(p.cli.action) << "state did not run: " << text;
  }
}

TEST(CmdArgs, GlobalFlagsKeepTheirDefaultsAndChoices) {
  Parsed p({"--systemd-cgroup", "state", "c1"});
  EXPECT_EQ(p.cli.app.get_option("--root")->get_default_str(), "/run/crx");  // in --help
  EXPECT_EQ(p.cli.global.root, "/run/crx");
  EXPECT_EQ(p.cli.log_format, "text");
  EXPECT_TRUE(p.cli.global.systemd_cgroup);
  Cli cli;
  crx::cmd::add_global_options(cli, {});
  crx::cmd::register_commands(cli, {});
  EXPECT_THROW(cli.app.parse(std::vector<std::string>{"c1", "state", "yaml", "--log-format"}),
               CLI::ValidationError);
}

TEST(CmdArgs, SingleDashLongFlagsAreRewrittenUpToTheContainerId) {
  const char* argv[] = {"crx", "-root", "/r", "exec", "-no-new-privs", "c1", "-root"};
  auto out = crx::cmd::normalize_args(7, const_cast<char**>(argv));
  EXPECT_EQ(out, (std::vector<std::string>{"--root", "/r", "exec", "--no-new-privs", "c1", "-root"}));
}

}  // namespace
