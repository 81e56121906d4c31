// crx spec [--bundle B] [--rootless]: writes a default config.json.
#include <cstdio>

#include "cli.hpp"
#include "commands.hpp"
#include "common/error.hpp"
#include "common/fs.hpp"
#include "spec/spec.hpp"

namespace crx::cmd {

void register_spec(Cli& cli) {
  struct Args {
    std::string bundle = ".";
    bool rootless = false;
  };
  auto* sub = add_command(cli, "spec");
  auto a = std::make_shared<Args>();
  sub->add_option("-b,--bundle", a->bundle, "directory to write config.json into");
  sub->add_flag("--rootless", a->rootless, "a spec for a rootless container");
  sub->callback([&cli, a] {
    cli.action = [a] {
      std::string path = a->bundle + "/config.json";
      if (path_exists(path)) throw Error("File " + path + " exists. Remove it first");
      write_file(path, spec::default_spec(a->rootless).dump(1, '\t') + "\n", 0666);
      return 0;
    };
  });
}

}  // namespace crx::cmd
