// crx rdma setup [--config FILE] / crx rdma status: this node's SoftRoCE
// for migration, crx's patched rdma_rxe with the node's QPN/MR-index
// ranges (runtime/rdma/rxe_setup.hpp). In crx-migrate: it reads the YAML
// config.
#include <cstdio>
#include <memory>

#include "cli.hpp"
#include "commands.hpp"
#include "cmd_criu_flags.hpp"
#include "migrate/config.hpp"
#include "rdma/rdma_config.hpp"
#include "rdma/rxe_setup.hpp"
#include "rdma/system_rdma_host.hpp"

namespace crx::cmd {

void register_rdma(Cli& cli) {
  auto* sub = add_command(cli, "rdma");
  sub->require_subcommand(1);
  auto config = std::make_shared<std::string>(migrate::kDefaultConfigPath);
  auto* setup = sub->add_subcommand(
      "setup", "load rdma_rxe with the config's QPN/MR ranges and add the rxe device");
  setup->add_option("--config", *config, "config file (default /etc/crx/config.yaml)");
  setup->callback([&cli, config] {
    cli.action = [config] {
      auto cfg = rdma::load_rdma_config(*config, *config != migrate::kDefaultConfigPath);
      rdma::SystemRdmaHost host;
      std::printf("%s", rdma::setup_rxe(cfg, host).c_str());
      return 0;
    };
  });
  auto* status = sub->add_subcommand("status", "show the rdma_rxe module, its ranges and devices");
  status->callback([&cli] {
    cli.action = [] {
      rdma::SystemRdmaHost host;
      std::printf("%s", rdma::rxe_status(host).c_str());
      return 0;
    };
  });
}

}  // namespace crx::cmd
