// crx receive --listen ADDR:PORT: the destination of `crx migrate`. Serves
// one migration at a time; --once exits after the first. SIGINT/SIGTERM
// between migrations end it cleanly (its RAM dir unmounted); during a
// migration they take effect once that migration has finished or timed out.
#include <poll.h>
#include <signal.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <memory>

#include "cli.hpp"
#include "commands.hpp"
#include "cmd_criu_flags.hpp"
#include "migrate_args.hpp"
#include "common/error.hpp"
#include "common/log.hpp"
#include "stop_signals.hpp"
#include "migrate/config.hpp"
#include "migrate/criu_sides.hpp"
#include "migrate/kernel_tls.hpp"
#include "migrate/ram_dir.hpp"
#include "migrate/receiver.hpp"
#include "migrate/stale_sessions.hpp"
#include "migrate/verbs_destination.hpp"
#include "rdma/container_qps.hpp"
#include "rdma/system_rdma_host.hpp"

namespace crx::cmd {
namespace {

// Waits for the next sender; false when a stop signal came first.
bool wait_for_sender(const migrate::TcpListener& listener) {
  while (!StopSignals::stop_requested()) {
    struct pollfd p{listener.fd(), POLLIN, 0};
    int r = ::poll(&p, 1, 1000);
    if (r > 0) return true;
    if (r < 0 && errno != EINTR) throw_errno("poll listening socket");
  }
  return false;
}

struct ReceiveArgs : MigrateConfigArgs {
  std::string listen;
  bool once = false;
};

}  // namespace

void register_receive(Cli& cli) {
  auto* sub = add_command(cli, "receive");
  auto a = std::make_shared<ReceiveArgs>();
  sub->add_option("--listen", a->listen, "ADDR:PORT to listen on");
  a->add_config_flags(sub, "RAM directory for received images");
  sub->add_flag("--once", a->once, "exit after one migration (status: its outcome)");
  a->add_wire_and_format_flags(sub);
  sub->callback([&cli, a] {
    cli.action = [&cli, a] {
      use_criu_binary(cli);
      auto cfg = a->load();
      if (!a->listen.empty()) cfg.listen = a->listen;
      const auto auth = MigrateConfigArgs::auth(cfg);
      const auto wire = auth.wire;
      std::string why;
      if (wire != migrate::WireSecurity::Plaintext && !migrate::kernel_tls_available(&why)) {
        throw Error("cannot encrypt page channels: " + why +
                        (wire == migrate::WireSecurity::TlsCert
                             ? "; load it (certificates need TLS)"
                             : "; load it, or pass --insecure-plaintext to both crx receive and "
                               "crx migrate"),
                    Cause::Unsupported);
      }
      migrate::RamDir ram(cfg.image_dir);
      // A receiver killed mid-migration left its images and maybe a
      // half-restored container (migrate/stale_sessions.hpp).
      for (const auto& line : migrate::sweep_stale_sessions(ram.path(), cli.global))
        log::warn("receive: " + line);
      migrate::TcpListener listener(migrate::parse_host_port(cfg.listen));
      std::fprintf(stderr, "crx receive: listening on %s (%s)\n", cfg.listen.c_str(),
                   wire == migrate::WireSecurity::Tls       ? "TLS, shared key"
                   : wire == migrate::WireSecurity::TlsCert ? "TLS, certificates"
                                                            : "clear text, --insecure-plaintext");
      migrate::ReceiverOptions o;
      auth.apply(o);
      o.image_root = ram.path();
      o.timeout = std::chrono::seconds(cfg.timeout_seconds);
      o.commit_timeout = std::chrono::seconds(cfg.timeout_seconds);
      o.lazy_timeout = std::chrono::seconds(cfg.timeout_seconds * 30);
      o.prepare_restore = cfg.prepare_restore;
      o.fill_after_resume = cfg.fill_after_resume;
      migrate::CriuDestination criu(cli.global);
      rdma::SystemRdmaHost rdma_host;
      rdma::ContainerQps qps(cli.global);
      migrate::VerbsDestination dest(criu, rdma_host, qps);
      StopSignals stop_signals;
      for (;;) {
        if (!wait_for_sender(listener)) {
          std::fprintf(stderr, "crx receive: stopped by a signal\n");
          return a->once ? 1 : 0;
        }
        std::string peer;
        auto fd = listener.accept(std::chrono::milliseconds(0), &peer);
        if (a->format == "text") o.progress = migrate::terminal_progress("receive from " + peer);
        auto report = migrate::receive_one(listener, std::move(fd), peer, dest, o);
        a->print(report);
        if (a->once) {
          if (report.outcome != "migrated") throw Error("migration " + report.outcome + ": " + report.error);
          return 0;
        }
        // The listener serves on: one line per refused or failed migration.
        if (report.outcome != "migrated") log::error("receive: " + report.error);
      }
    };
  });
}

}  // namespace crx::cmd
