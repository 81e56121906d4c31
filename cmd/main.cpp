// crx entry point: global flags, logging, dispatch, one-line errors.
#include <cstdio>

#include "cli.hpp"
#include "common/error.hpp"
#include "common/log.hpp"

int main(int argc, char** argv) {
  using namespace crx;
  auto args = cmd::normalize_args(argc, argv);
  cmd::forward_if_elsewhere(args, argv);  // crx: the migration commands are crx-migrate's
  cmd::Cli cli;
  auto& app = cli.app;
  cmd::add_global_options(cli, args);
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
