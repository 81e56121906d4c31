// crx ps: the container's processes, as a JSON array of host pids
// (--format json, what containerd reads) or as ps(1) output filtered to them.
#include <sys/wait.h>

#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli.hpp"
#include "commands.hpp"
#include "common/error.hpp"
#include "container/ps.hpp"

namespace crx::cmd {

namespace {

std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

std::string run_ps(const std::vector<std::string>& args) {
  std::string cmd = "ps";
  for (const auto& a : args) cmd += " " + shell_quote(a);
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) throw_errno("ps: popen");
  std::string out;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  int status = ::pclose(p);
  if (status != 0) throw Error("ps: `" + cmd + "` failed (status " + std::to_string(WEXITSTATUS(status)) + ")");
  return out;
}

}  // namespace

void register_ps(Cli& cli) {
  struct Args {
    std::string id;
    std::string format = "table";
  };
  auto* sub = add_command(cli, "ps");
  auto a = std::make_shared<Args>();
  sub->add_option("-f,--format", a->format, "table or json")->check(CLI::IsMember({"table", "json"}));
  sub->add_option("id", a->id, "container id")->required();
  sub->prefix_command();
  sub->fallthrough(false);  // the command's args are not crx's positionals
  sub->callback([&cli, sub, a] {
    cli.action = [&cli, sub, a] {
      auto pids = container::container_pids(cli.global, a->id);
      if (a->format == "json") {
        std::printf("%s\n", nlohmann::json(pids).dump().c_str());
        return 0;
      }
      auto args = sub->remaining();
      if (!args.empty() && args.front() == "--") args.erase(args.begin());
      if (args.empty()) args = {"-ef"};
      std::fputs(container::filter_ps_output(run_ps(args), pids).c_str(), stdout);
      return 0;
    };
  });
}

}  // namespace crx::cmd
