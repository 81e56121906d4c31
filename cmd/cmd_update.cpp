// crx update: change a running container's cgroup limits, from runc's
// flags or `--resources file|-` (a LinuxResources JSON; containerd sends
// `--resources=-` with the JSON on stdin).
#include <iostream>
#include <iterator>
#include <memory>
#include <nlohmann/json.hpp>

#include "cli.hpp"
#include "commands.hpp"
#include "common/error.hpp"
#include "common/fs.hpp"
#include "container/update.hpp"

namespace crx::cmd {

namespace {

nlohmann::json read_resources(const std::string& source) {
  std::string text;
  if (source == "-") {
    text.assign(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
  } else {
    text = read_file(source);
  }
  try {
    return nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw Error("update: --resources " + source + ": " + e.what());
  }
}

}  // namespace

void register_update(Cli& cli) {
  struct Args {
    std::string id;
    std::string resources;
    container::UpdateFlags f;
    std::string l3_cache_schema, mem_bw_schema;
  };
  auto* sub = add_command(cli, "update");
  auto a = std::make_shared<Args>();
  auto& f = a->f;
  sub->add_option("-r,--resources", a->resources, "LinuxResources JSON file, or - for stdin");
  sub->add_option("--memory", f.memory, "memory limit (e.g. 512m, -1 = unlimited)");
  sub->add_option("--memory-swap", f.memory_swap, "memory+swap limit");
  sub->add_option("--memory-reservation", f.memory_reservation, "memory soft limit");
  sub->add_option("--kernel-memory", f.kernel_memory, "kernel memory limit (v1)");
  sub->add_option("--kernel-memory-tcp", f.kernel_memory_tcp, "kernel TCP buffer limit (v1)");
  sub->add_option("--cpu-shares", f.cpu_shares, "CPU shares (relative weight)");
  sub->add_option("--cpu-quota", f.cpu_quota, "CPU CFS quota (us per period)");
  sub->add_option("--cpu-period", f.cpu_period, "CPU CFS period (us)");
  sub->add_option("--cpu-rt-period", f.cpu_rt_period, "CPU realtime period (us)");
  sub->add_option("--cpu-rt-runtime", f.cpu_rt_runtime, "CPU realtime runtime (us)");
  sub->add_option("--cpuset-cpus", f.cpuset_cpus, "CPUs allowed (0-3, 0,1)");
  sub->add_option("--cpuset-mems", f.cpuset_mems, "memory nodes allowed");
  sub->add_option("--pids-limit", f.pids_limit, "maximum number of pids");
  sub->add_option("--blkio-weight", f.blkio_weight, "block IO weight (10-1000)");
  sub->add_option("--l3-cache-schema", a->l3_cache_schema, "intel RDT (not supported)");
  sub->add_option("--mem-bw-schema", a->mem_bw_schema, "intel RDT (not supported)");
  sub->add_option("id", a->id, "container id")->required();
  sub->callback([&cli, a] {
    cli.action = [&cli, a] {
      if (!a->l3_cache_schema.empty() || !a->mem_bw_schema.empty())
        throw Error("update: intel RDT is not supported by crx");
      nlohmann::json res = a->resources.empty() ? nlohmann::json::object() : read_resources(a->resources);
      // flags win over the file, as in runc
      res.merge_patch(container::resources_json_from_flags(a->f));
      container::update_container(cli.global, a->id, res);
      return 0;
    };
  });
}

}  // namespace crx::cmd
