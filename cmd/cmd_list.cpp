// crx list [--format table|json] [-q]
#include <cstdio>
#include <ctime>

#include "cli.hpp"
#include "commands.hpp"
#include "container/lifecycle.hpp"

namespace crx::cmd {

void register_list(Cli& cli) {
  struct Args {
    std::string format = "table";
    bool quiet = false;
  };
  auto* sub = add_command(cli, "list");
  auto a = std::make_shared<Args>();
  sub->add_option("-f,--format", a->format, "table or json")->check(CLI::IsMember({"table", "json"}));
  sub->add_flag("-q,--quiet", a->quiet, "print only ids");
  sub->callback([&cli, a] {
    cli.action = [&cli, a] {
      auto all = container::list_containers(cli.global);
      if (a->quiet) {
        for (auto& c : all) std::printf("%s\n", c["id"].get<std::string>().c_str());
        return 0;
      }
      if (a->format == "json") {
        std::printf("%s\n", nlohmann::json(all).dump().c_str());
        return 0;
      }
      std::printf("%-12s %-8s %-10s %-40s %-31s %s\n", "ID", "PID", "STATUS", "BUNDLE", "CREATED", "OWNER");
      for (auto& c : all)
        std::printf("%-12s %-8d %-10s %-40s %-31s %s\n", c["id"].get<std::string>().c_str(),
                    c["pid"].get<int>(), c["status"].get<std::string>().c_str(),
                    c["bundle"].get<std::string>().c_str(), c["created"].get<std::string>().c_str(),
                    c.value("owner", "").c_str());
      return 0;
    };
  });
}

}  // namespace crx::cmd
