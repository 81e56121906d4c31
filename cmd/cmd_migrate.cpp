// crx migrate ID --to HOST:PORT: live migration straight into the
// destination's memory (see runtime/migrate/sender.hpp).
#include <signal.h>

#include <atomic>
#include <cstdio>
#include <memory>
#include <optional>

#include "checkpoint/criu_rpc.hpp"
#include "cli.hpp"
#include "commands.hpp"
#include "cmd_criu_flags.hpp"
#include "migrate_args.hpp"
#include "common/error.hpp"
#include "stop_signals.hpp"
#include "migrate/config.hpp"
#include "migrate/criu_sides.hpp"
#include "migrate/freeze_hook.hpp"
#include "migrate/manifest.hpp"
#include "migrate/precopy.hpp"
#include "migrate/ram_dir.hpp"
#include "migrate/sender.hpp"
#include "migrate/verbs_source.hpp"
#include "rdma/container_qps.hpp"
#include "state/store.hpp"

namespace crx::cmd {
namespace {

struct MigrateArgs : MigrateConfigArgs {
  std::string id;
  std::string to;
  std::string pre_copy;  // N or auto (migrate/precopy.hpp)
  double min_shrink = -1;
  bool send_rootfs = false;
  bool kill_exec = false;
  bool lazy = false;
  bool no_page_dedup = false;
  bool no_page_compression = false;
  std::string pre_dump_mode = "splice";
  std::string on_freeze;
  CriuFlagArgs criu;
};

}  // namespace

void register_migrate(Cli& cli) {
  auto* sub = add_command(cli, "migrate");
  auto a = std::make_shared<MigrateArgs>();
  sub->add_option("id", a->id, "container id")->required();
  sub->add_option("--to", a->to, "HOST:PORT of the receiver")->required();
  a->add_config_flags(sub, "RAM directory for the images in flight");
  sub->add_option("--pre-copy", a->pre_copy,
                  "at most N pre-copy rounds while the container runs, or auto: as many as "
                  "the measured dirty rate and bandwidth make worth it")
      ->check(CLI::Validator(
          [](std::string& v) { return migrate::pre_copy_arg_error(v); }, "N|auto", "pre-copy"));
  sub->add_option("--min-shrink", a->min_shrink, "stop pre-copy when a round shrinks less (percent)")
      ->check(CLI::Range(0.0, 100.0));
  sub->add_flag("--lazy", a->lazy,
                "post-copy: resume on the destination before the memory arrives; the memory "
                "follows on demand and in the background, the source stays frozen until it has "
                "all, and a failure meanwhile loses the running copy (see the migrate README)");
  sub->add_flag("--no-page-dedup", a->no_page_dedup,
                "send every page CRIU dumps, also those the destination holds unchanged from an "
                "earlier round (by default they are left out; for comparisons)");
  sub->add_flag("--no-page-compression", a->no_page_compression,
                "send the encrypted page channel uncompressed (by default what LZ4 shrinks "
                "goes compressed; for comparisons)");
  sub->add_option("--pre-dump-mode", a->pre_dump_mode,
                  "how a pre-copy round takes the pages: splice (default, as CRIU's) keeps the "
                  "container stopped until they are in pipes; read lets it run once its page "
                  "map is taken and reads them meanwhile, for more CPU")
      ->check(CLI::Validator(
          [](std::string& v) {
            return v == "read" || v == "splice"
                       ? std::string()
                       : "expected \"read\" or \"splice\", got \"" + v + "\"";
          },
          "read|splice", "pre-dump-mode"));
  sub->add_flag("--send-rootfs", a->send_rootfs, "send config.json and rootfs if the destination lacks them");
  sub->add_flag("--kill-exec", a->kill_exec,
                "accept losing processes outside the init's tree (crx exec): they are not "
                "moved and are killed with the source; without it such a container is refused");
  sub->add_option("--on-freeze", a->on_freeze,
                  "shell command run once the container is frozen, before its final dump "
                  "(e.g. take its address off this host); the migration waits for it, and "
                  "fails and resumes the container if it exits non-zero")
      ->check([](const std::string& v) {
        return v.find_first_not_of(" \t") == std::string::npos ? "empty command"
                                                               : std::string();
      });
  a->add_wire_and_format_flags(sub);
  add_criu_flags(sub, a->criu, false);
  sub->callback([&cli, a] {
    cli.action = [&cli, a] {
      use_criu_binary(cli);
      auto cfg = a->load();
      if (!a->pre_copy.empty()) migrate::apply_pre_copy_arg(cfg.pre_copy, a->pre_copy);
      // Post-copy needs no round before the freeze; the config's default
      // rounds give way to --lazy, an explicit --pre-copy is refused.
      if (a->lazy && !a->pre_copy.empty() && (cfg.pre_copy.adaptive || cfg.pre_copy.max_rounds > 0))
        throw Error("--lazy and --pre-copy exclude each other: post-copy moves the memory after "
                    "the resume, so no round before the freeze is needed",
                    Cause::Invalid);
      // Read mode needs the copying page channel, which only the page
      // filter makes (runtime/migrate/README.md, "Read mode needs a page
      // channel that copies").
      if (a->pre_dump_mode == "read" && a->no_page_dedup)
        throw Error("--pre-dump-mode read needs crx's page filter, which --no-page-dedup "
                    "turns off",
                    Cause::Invalid);
      if (a->lazy) {
        cfg.pre_copy.adaptive = false;
        cfg.pre_copy.max_rounds = 0;
      }
      if (a->min_shrink >= 0) cfg.pre_copy.min_shrink_percent = a->min_shrink;
      const auto auth = MigrateConfigArgs::auth(cfg);

      // Read the state, then let go of the container's lock: the migration
      // takes a while and `crx state` must keep working meanwhile.
      state::ContainerState st = state::StateDir::open(cli.global.root, a->id).load();
      migrate::SenderOptions o;
      o.to = migrate::parse_host_port(a->to);
      auth.apply(o);
      auto criu_flags = a->criu.to_flags();
      o.manifest = migrate::source_manifest(a->id, st.bundle, criu_flags, a->send_rootfs,
                                            migrate::host_versions());
      o.rootfs_bundle = st.bundle;
      migrate::RamDir ram(cfg.image_dir);
      o.work_dir = ram.path() + "/out-" + a->id + "-" + migrate::random_hex(4);
      o.pre_copy = cfg.pre_copy;
      o.timeout = std::chrono::seconds(cfg.timeout_seconds);
      o.restore_timeout = std::chrono::seconds(cfg.timeout_seconds * 5);
      o.manifest.lazy = a->lazy;
      o.lazy_timeout = std::chrono::seconds(cfg.timeout_seconds * 30);
      if (a->format == "text") o.progress = migrate::terminal_progress("migrate " + a->id);
      StopSignals stop_signals;
      o.cancel = &StopSignals::flag();

      // Preflight, before anything is frozen: the container's verbs
      // objects go into the manifest for the receiver to check.
      rdma::ContainerQps qps(cli.global);
      auto inv = qps.inventory(a->id);
      rdma::refuse_unsupported(a->id, inv);
      // Pinned MRs are read and written by the NIC, which never faults:
      // their memory must be in place before the container resumes, and
      // CRIU's lazy pages cannot order that. Refused before anything runs.
      if (a->lazy && !inv.empty())
        throw Error("--lazy: container " + a->id + " has verbs objects (" +
                        std::to_string(inv.mrns.size()) + " MR(s) pinning " +
                        migrate::human_bytes(inv.mr_bytes) +
                        "), whose memory must be in place before it resumes; migrate it "
                        "without --lazy",
                    Cause::Unsupported);
      if (!inv.empty()) o.manifest.rdma = inv;

      // Refuses here, before anything is frozen, when the container has
      // processes CRIU would leave behind (unless --kill-exec).
      migrate::CriuSource criu(cli.global, a->id, criu_flags, a->kill_exec);
      if (a->no_page_dedup) criu.disable_page_dedup();
      if (a->no_page_compression) criu.disable_page_compression();
      if (a->pre_dump_mode == "read") criu.enable_pre_dump_read();
      o.manifest.inventory = criu.inventory().to_json();
      o.manifest.elf_files = criu.read_elf_files();
      migrate::VerbsSource verbs(criu, qps, a->id, !inv.empty());
      std::optional<migrate::FreezeHookSource> hooked;
      if (!a->on_freeze.empty()) hooked.emplace(verbs, a->on_freeze, a->id, o.timeout);
      migrate::SourceSide& source = hooked ? static_cast<migrate::SourceSide&>(*hooked) : verbs;
      auto report = migrate::migrate_out(source, o);
      report.inventory = *o.manifest.inventory;
      if (report.outcome == "migrated") {
        report.paused = criu.paused();
        for (const auto& p : criu.left_out())
          report.left_out.push_back(checkpoint::describe({p}));
      }
      a->print(report);
      if (report.outcome != "migrated") throw Error("migration of " + a->id + " " + report.outcome + ": " + report.error);
      return 0;
    };
  });
}

}  // namespace crx::cmd
