// The CRIU flags checkpoint, restore and migrate share.
#pragma once
#include <string>
#include <vector>

#include "checkpoint/container_checkpoint.hpp"
#include "checkpoint/criu_rpc.hpp"
#include "cli.hpp"

namespace crx::cmd {

// runc's global --criu PATH: every criu the command runs is that one.
inline void use_criu_binary(const Cli& cli) {
  if (!cli.criu_path.empty()) checkpoint::set_criu_binary(cli.criu_path);
}

struct CriuFlagArgs {
  bool tcp_established = false, ext_unix_sk = false, shell_job = false, file_locks = false;
  bool lazy_pages = false, auto_dedup = false;
  std::string manage_cgroups_mode;
  std::vector<std::string> empty_ns;

  checkpoint::CriuFlags to_flags() const {
    checkpoint::CriuFlags f;
    f.tcp_established = tcp_established;
    f.ext_unix_sk = ext_unix_sk;
    f.shell_job = shell_job;
    f.file_locks = file_locks;
    f.lazy_pages = lazy_pages;
    f.auto_dedup = auto_dedup;
    if (!manage_cgroups_mode.empty())
      f.manage_cgroups_mode = checkpoint::parse_cgroup_mode(manage_cgroups_mode);
    f.empty_ns = empty_ns;
    return f;
  }
};

inline void add_criu_flags(CLI::App* sub, CriuFlagArgs& f, bool lazy = true) {
  sub->add_flag("--tcp-established", f.tcp_established, "allow open TCP connections");
  sub->add_flag("--ext-unix-sk", f.ext_unix_sk, "allow external unix sockets");
  sub->add_flag("--shell-job", f.shell_job, "allow shell jobs (controlling terminal)");
  sub->add_flag("--file-locks", f.file_locks, "handle file locks");
  if (lazy) sub->add_flag("--lazy-pages", f.lazy_pages, "use userfaultfd lazy pages");
  sub->add_flag("--auto-dedup", f.auto_dedup, "deduplicate images against the parent");
  sub->add_option("--manage-cgroups-mode", f.manage_cgroups_mode,
                  "cgroups mode: soft|full|strict|ignore");
  // One value per occurrence, so `--empty-ns network ID` leaves ID alone.
  sub->add_option("--empty-ns", f.empty_ns, "namespace to leave empty (network)")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
}

void register_checkpoint(Cli& cli);
void register_restore(Cli& cli);
void register_migrate(Cli& cli);
void register_receive(Cli& cli);
void register_rdma(Cli& cli);  // cmd_rdma.cpp (not a CRIU command, but crx-migrate's)

}  // namespace crx::cmd
