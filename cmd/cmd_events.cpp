// crx events: runc's event stream (stats every --interval, OOM kills) or
// one stats object with --stats.
#include <cstdio>
#include <memory>

#include "cli.hpp"
#include "commands.hpp"
#include "container/events.hpp"

namespace crx::cmd {

void register_events(Cli& cli) {
  struct Args {
    std::string id;
    std::string interval = "5s";
    bool stats = false;
  };
  auto* sub = add_command(cli, "events");
  auto a = std::make_shared<Args>();
  sub->add_option("--interval", a->interval, "stats interval (Go duration, default 5s)");
  sub->add_flag("--stats", a->stats, "print one stats event and exit");
  sub->add_option("id", a->id, "container id")->required();
  sub->callback([&cli, a] {
    cli.action = [&cli, a] {
      container::container_events(cli.global, a->id, container::parse_duration(a->interval), a->stats, stdout);
      return 0;
    };
  });
}

}  // namespace crx::cmd
