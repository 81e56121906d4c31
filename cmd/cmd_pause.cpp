// crx pause / crx resume: freeze and thaw every process of a container.
#include <memory>

#include "cli.hpp"
#include "commands.hpp"
#include "container/pause.hpp"

namespace crx::cmd {

void register_pause(Cli& cli) {
  auto* sub = add_command(cli, "pause");
  auto id = std::make_shared<std::string>();
  sub->add_option("id", *id, "container id")->required();
  sub->callback([&cli, id] {
    cli.action = [&cli, id] {
      container::pause_container(cli.global, *id);
      return 0;
    };
  });
}

void register_resume(Cli& cli) {
  auto* sub = add_command(cli, "resume");
  auto id = std::make_shared<std::string>();
  sub->add_option("id", *id, "container id")->required();
  sub->callback([&cli, id] {
    cli.action = [&cli, id] {
      container::resume_container(cli.global, *id);
      return 0;
    };
  });
}

}  // namespace crx::cmd
