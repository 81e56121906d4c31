// The command line crx scans before CLI11 (cmd/dispatch.cpp) must know
// every flag the commands register, and whether it takes a value:
// otherwise a flag's value is taken for the subcommand or the container
// id, and a runc-style "-flag" is not rewritten. This checks the table
// against CLI11's options of every command, so a new flag cannot be
// forgotten there; and that every command of the table is registered
// with the table's name and description.
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
                                     << " is missing from cmd/dispatch.cpp's kFlags";
      if (!known) continue;
      EXPECT_EQ(*known, value) << where << ": flag " << name << (value ? " takes" : " takes no")
                               << " value but kFlags says otherwise";
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
}

TEST(CmdArgs, SingleDashLongFlagsAreRewrittenUpToTheContainerId) {
  const char* argv[] = {"crx", "-root", "/r", "exec", "-no-new-privs", "c1", "-root"};
  auto out = crx::cmd::normalize_args(7, const_cast<char**>(argv));
  EXPECT_EQ(out, (std::vector<std::string>{"--root", "/r", "exec", "--no-new-privs", "c1", "-root"}));
}

}  // namespace
