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

struct ReceiveArgs {
  std::string listen;
  std::string config = migrate::kDefaultConfigPath;
  std::string key_file;
  std::string image_dir;
  int timeout = 0;
  bool once = false;
  std::string format = "text";
  bool insecure_plaintext = false;
};

}  // namespace

void register_receive(Cli& cli) {
  auto* sub = add_command(cli, "receive");
  auto a = std::make_shared<ReceiveArgs>();
  sub->add_option("--listen", a->listen, "ADDR:PORT to listen on");
  sub->add_option("--config", a->config, "config file (default /etc/crx/config.yaml)");
  sub->add_option("--key", a->key_file, "shared key file (mode 0600)");
  sub->add_option("--image-dir", a->image_dir, "RAM directory for received images");
  sub->add_option("--timeout", a->timeout, "seconds per network step");
  sub->add_flag("--once", a->once, "exit after one migration (status: its outcome)");
  sub->add_flag("--insecure-plaintext", a->insecure_plaintext,
                "no TLS: the memory and images cross the network in clear text, only the key "
                "is proved; the other end must say so too");
  sub->add_option("--format", a->format, "report format: text or json")
      ->check(CLI::IsMember({"text", "json"}));
  sub->callback([&cli, a] {
    cli.action = [&cli, a] {
      auto cfg = migrate::load_migrate_config(a->config, a->config != migrate::kDefaultConfigPath);
      if (!a->listen.empty()) cfg.listen = a->listen;
      if (!a->key_file.empty()) cfg.key_file = a->key_file;
      if (!a->image_dir.empty()) cfg.image_dir = a->image_dir;
      if (a->timeout > 0) cfg.timeout_seconds = a->timeout;
      if (a->insecure_plaintext) cfg.insecure_plaintext = true;
      auto key = migrate::SharedKey::from_file(cfg.key_file);
      auto wire = cfg.insecure_plaintext ? migrate::WireSecurity::Plaintext : migrate::WireSecurity::Tls;
      std::string why;
      if (wire == migrate::WireSecurity::Tls && !migrate::kernel_tls_available(&why)) {
        throw Error("cannot encrypt page channels: " + why +
                        "; load it, or pass --insecure-plaintext to both crx receive and crx migrate",
                    Cause::Unsupported);
      }
      migrate::RamDir ram(cfg.image_dir);
      // A receiver killed mid-migration left its images and maybe a
      // half-restored container (migrate/stale_sessions.hpp).
      for (const auto& line : migrate::sweep_stale_sessions(ram.path(), cli.global))
        log::warn("receive: " + line);
      migrate::TcpListener listener(migrate::parse_host_port(cfg.listen));
      std::fprintf(stderr, "crx receive: listening on %s (%s)\n", cfg.listen.c_str(),
                   wire == migrate::WireSecurity::Tls ? "TLS"
                                                      : "clear text, --insecure-plaintext");
      migrate::ReceiverOptions o;
      o.key = &key;
      o.wire = wire;
      o.image_root = ram.path();
      o.timeout = std::chrono::seconds(cfg.timeout_seconds);
      o.commit_timeout = std::chrono::seconds(cfg.timeout_seconds);
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
        if (a->format == "json") {
          std::printf("%s\n", report.to_json().c_str());
        } else {
          std::printf("%s", report.to_text().c_str());
        }
        std::fflush(stdout);
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
