// start, state, kill, delete: commands on one existing container.
#include <cstdio>

#include "cli.hpp"
#include "commands.hpp"
#include "container/lifecycle.hpp"

namespace crx::cmd {

void register_start(Cli& cli) {
  auto* sub = add_command(cli, "start");
  auto id = std::make_shared<std::string>();
  sub->add_option("id", *id, "container id")->required();
  sub->callback([&cli, id] {
    cli.action = [&cli, id] {
      container::start_container(cli.global, *id);
      return 0;
    };
  });
}

void register_state(Cli& cli) {
  auto* sub = add_command(cli, "state");
  auto id = std::make_shared<std::string>();
  sub->add_option("id", *id, "container id")->required();
  sub->callback([&cli, id] {
    cli.action = [&cli, id] {
      std::printf("%s\n", container::container_state(cli.global, *id).dump(2).c_str());
      return 0;
    };
  });
}

void register_kill(Cli& cli) {
  struct Args {
    std::string id;
    std::string signal = "SIGTERM";
    bool all = false;
  };
  auto* sub = add_command(cli, "kill");
  auto a = std::make_shared<Args>();
  sub->add_flag("-a,--all", a->all, "signal every process of the container");
  sub->add_option("id", a->id, "container id")->required();
  sub->add_option("signal", a->signal, "signal name or number (default SIGTERM)");
  sub->callback([&cli, a] {
    cli.action = [&cli, a] {
      container::kill_container(cli.global, a->id, container::parse_signal(a->signal), a->all);
      return 0;
    };
  });
}

void register_delete(Cli& cli) {
  auto* sub = add_command(cli, "delete");
  auto id = std::make_shared<std::string>();
  auto force = std::make_shared<bool>(false);
  sub->add_flag("-f,--force", *force, "kill the container first if it is running");
  sub->add_option("id", *id, "container id")->required();
  sub->callback([&cli, id, force] {
    cli.action = [&cli, id, force] {
      container::delete_container(cli.global, *id, *force);
      return 0;
    };
  });
}

}  // namespace crx::cmd
