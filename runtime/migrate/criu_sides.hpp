// The real SourceSide/DestinationSide: CRIU and the crx runtime.
#pragma once
#include <memory>
#include <optional>
#include <set>
#include <unordered_map>
#include <string>
#include <vector>

#include "checkpoint/container_checkpoint.hpp"
#include "checkpoint/criu_rpc.hpp"
#include "checkpoint/fresh_netns.hpp"
#include "checkpoint/uts_ipc_anew.hpp"
#include "migrate/elf_files.hpp"
#include "migrate/inventory.hpp"
#include "migrate/page_dedup.hpp"
#include "migrate/sides.hpp"
#include "migrate/task_memory.hpp"
#include "rdma/mr_writes.hpp"

namespace crx::migrate {

// Refuses a container with a terminal in the constructor. Refuses in the
// constructor (before anything is frozen) and again in
// freeze() (now nothing can start) when the container has processes
// outside its init's tree, unless kill_exec (checkpoint/outside_processes.hpp),
// or unix sockets connected outside it (checkpoint/unix_sockets.hpp).
// A container paused before the migration stays paused: the final dump
// carries that (crx-container.json, with the resources, annotations, owner
// and pid file), and a rollback leaves it frozen.
class CriuSource : public SourceSide {
 public:
  CriuSource(container::GlobalOptions g, std::string id, checkpoint::CriuFlags flags,
             bool kill_exec = false);
  void pre_dump(const std::string& images_dir, const std::string& parent, int page_fd) override;
  // The final dump's `criu swrk` started (StartedDump), with the page
  // filter's socket to CRIU made for it, and its request sent with the
  // choices the running container gives (final_dump_options): CRIU waits
  // at its pre-dump notification. dump() makes the choices again frozen and
  // lets it go on when they are the same.
  void prepare_dump(const std::string& images_dir, const std::string& parent,
                    int page_fd) override;
  void freeze() override;
  void dump(const std::string& images_dir, const std::string& parent, int page_fd,
            ParentPages parent_pages) override;
  void resume() override;
  void destroy() override;
  // CRIU's lazy dump in a thread of its own (criu_dump returns only once
  // the destination has every page); see CriuLazyDump in the .cpp.
  std::unique_ptr<LazyDump> lazy_dump(const std::string& images_dir, UniqueFd page_fd) override;
  // The processes outside the init's tree that the final dump left out
  // (--kill-exec); destroy() kills them with the source.
  const std::vector<checkpoint::OutsideProcess>& left_out() const { return left_out_; }
  bool paused() const { return src_.paused; }
  // What the final dump will carry, for the manifest (before the freeze).
  Inventory inventory() const { return take_inventory(src_); }
  // Every page CRIU dumps goes on, even one the destination holds already
  // unchanged (--no-page-dedup: for comparisons).
  void disable_page_dedup() { page_dedup_ = false; }
  // The page filter writes the frames (zero_runs.hpp); without it, CRIU
  // writes the channel itself and nothing is framed.
  bool zero_runs(bool destination_decodes) override {
    zero_runs_ = destination_decodes && page_dedup_;
    return zero_runs_;
  }
  // Frames are never compressed (--no-page-compression: for comparisons).
  void disable_page_compression() { page_compression_ = false; }
  // Pre-copy rounds read the pages while the container runs
  // (--pre-dump-mode read, DumpOptions::pre_dump_read) instead of keeping it
  // stopped while CRIU splices them (CRIU's default, and crx's: Result 28
  // of tests/bench/mpi measured no gain on the test bed for more CPU).
  void enable_pre_dump_read() { pre_dump_read_ = true; }
  bool compress_pages(bool destination_decodes) override {
    compress_ = destination_decodes && zero_runs_ && page_compression_;
    return compress_;
  }
  RoundStats last_round() const override { return last_round_; }
  // With a destination that makes them, a final dump leaves the
  // container's UTS and IPC namespaces out when its IPC namespace holds no
  // SysV object (check_uts_ipc).
  void destination_makes_uts_ipc(bool yes) override;
  // With a destination that takes a LateState, a final dump (not a lazy
  // one) decides at the freeze only how the network namespace moves; its
  // sysctls are read by late_state(), after the images are sent.
  void destination_takes_late_state(bool yes) override { late_state_taken_ = yes; }
  void destination_has_elf_files(bool same) override { elf_files_same_ = same; }
  // Compares it with the container's own here, once, outside the window.
  void destination_cgroup(const std::string& path) override;
  // Before the manifest goes: the ELF files the container's tasks map or
  // hold open, with their build-ids (elf_files.hpp), kept for the frozen
  // window's comparison.
  std::vector<ElfFile> read_elf_files();
  LateState late_state() override;

 private:
  // Which of the container's namespaces a final dump leaves out of the
  // images, for the destination to make anew: CRIU runs in them.
  struct NamespacesAnew {
    bool net = false;      // check_netns
    bool uts_ipc = false;  // check_uts_ipc
  };
  // A dump's options into the open images and work dirs: the container's
  // base options, the parent, memory tracking, the network lock. For a
  // final dump also what crx decides from the container's state: the
  // mounts made again (MountsChoice: frozen, their contents packed into
  // images_dir; or ahead), the verbs plugin, CRIU's build-ids. Its
  // namespaces and page channel are the caller's.
  checkpoint::DumpOptions dump_options(int images_fd, int work_fd, const std::string& parent,
                                       const char* log,
                                       std::optional<checkpoint::MountsChoice> final_dump,
                                       const std::string& images_dir) const;
  // One CRIU dump call (pre-dump or final) into images_dir, its ".work"
  // sibling as work dir, pages to page_fd, leaving out the namespaces anew.
  void run_dump(void (*criu_call)(const checkpoint::DumpOptions&, const checkpoint::NotifyHandler&),
                const std::string& images_dir, std::string parent, int page_fd, const char* log,
                bool final_dump, ParentPages parent_pages, NamespacesAnew anew);
  // The processes in the container's cgroup (host pids).
  std::vector<pid_t> container_pids() const;
  // Before the first pre-dump reads the memory: clears the write logs of
  // the container's MRs (rdma/mr_writes.hpp) and keeps write_baseline_.
  // Never throws: without the logs, the final dump checks every page.
  void start_write_logs();
  // In the frozen window, the QPs stopped: per task of `memory`, the pages
  // the device wrote since start_write_logs(); nullopt when the logs
  // cannot tell. Never throws.
  std::optional<std::unordered_map<uint64_t, rdma::PageRanges>> device_writes(
      const ProcTaskMemory& memory) const;
  // Does a final dump need CRIU's verbs plugin (a task holds a verbs
  // context)? Without one, CRIU loads no plugin: that is 0.09 s less of
  // frozen time (tests/bench/migrate README). Asked frozen, and ahead.
  bool needs_verbs_plugin() const;
  // Whether the final dump may validate file sizes only (the destination
  // found every ELF file of read_elf_files() the same, and the tasks hold
  // no other): asked in the frozen window, and before it for the request
  // sent ahead. Never throws.
  bool build_ids_checked() const;
  // Whether the final dump may leave the container's cgroup to the
  // destination (CRIU's cgroup mode "ignore": no cgroup2 mount and no walk
  // of the cgroup's files in the frozen window). Only when CRIU's restore
  // would take nothing from that walk: the user chose no cgroup mode (so
  // the destination restores in soft mode, which sets no property of a
  // cgroup it finds made), the destination made the cgroup at the
  // container's own path (the images' set points there, and soft mode
  // rewrites no root without a cgroup directory in the images), and the
  // container made no cgroup below its own, which only the walk records.
  // Asked frozen, and ahead. Never throws.
  bool cgroup_left_to_destination() const;
  // The container's own network namespace at the freeze, against a new
  // one (checkpoint/fresh_netns.hpp). Its configuration as a new one's:
  // the final dump leaves it out and CRIU's restore makes a new one
  // instead of running its network tools on both ends (~5 s of a guest's
  // frozen window). Its sysctls that differ from a new one's and that the
  // dump does not carry go with crx's carried state.
  struct NetnsAtFreeze {
    bool moves_empty = false;
    checkpoint::NetSysctls carried;
    bool read_ahead = false;  // RoundStats::netns_read_ahead
    bool sysctls_late = false;  // RoundStats::net_sysctls_late
  };
  // sysctls_later: the sysctls are left to late_state() where the
  // namespace is watched (late_netns_) and moves empty (CRIU's dump does
  // not touch it then), not read now.
  NetnsAtFreeze check_netns(bool sysctls_later);
  // What check_netns() found, into last_round_ (for the report).
  void record_netns(const NetnsAtFreeze& net);
  // Refuses processes outside the init's tree (unless kill_exec_, then
  // left_out_ names them) and unix sockets of the tree connected outside
  // it; one walk of the processes for both.
  void check_processes();
  // The container's UTS and IPC namespaces at the freeze: what they hold,
  // when the destination can make them anew holding it (nullopt: CRIU
  // dumps them; checkpoint/uts_ipc_anew.hpp).
  std::optional<checkpoint::UtsIpcContent> check_uts_ipc() const;
  // What check_netns() and check_uts_ipc() will decide at the freeze, as
  // the running container shows it now (for prepare_dump's request).
  NamespacesAnew namespaces_anew_ahead() const;
  // The container's namespaces that CRIU is to run in, in the order
  // DumpOptions::criu_namespace_fds and StartedDump compare them (net,
  // uts, ipc).
  std::vector<UniqueFd> container_namespaces(NamespacesAnew anew) const;
  // Points o at them for CRIU to run in, and drops the network lock CRIU
  // would still set up for a network namespace it does not dump; returns
  // the fds o now refers to.
  std::vector<UniqueFd> criu_in_container_namespaces(checkpoint::DumpOptions& o,
                                                     NamespacesAnew anew) const;
  // The final dump made ready before the freeze (prepare_dump): for
  // images_dir and page_fd, CRIU in the container's namespaces that are
  // expected to be made anew (check_netns and check_uts_ipc decide in the
  // window; where they decide otherwise, the dump starts a CRIU of its own).
  struct ReadyDump {
    std::string images_dir;
    int page_fd = -1;
    UniqueFd images, work;  // the request's dirs, the final dump's too
    std::optional<PageDedupRelay::Ends> relay_ends;  // with the page filter
    UniqueFd output;                                // CRIU's stdout/stderr: dump.log
    std::vector<UniqueFd> namespaces;               // where CRIU runs, when not ours
    std::unique_ptr<checkpoint::StartedDump> criu;  // null: it went (the request did not fit)
    bool request_ahead = false;  // criu waits at its pre-dump (StartedDump::send_ahead)
  };
  // crx's carried state, with what check_netns() and check_uts_ipc() found.
  void write_carried_state(const std::string& images_dir, const NetnsAtFreeze& net,
                           const std::optional<checkpoint::UtsIpcContent>& uts_ipc) const;
  container::GlobalOptions g_;
  std::string id_;
  std::optional<rdma::WriteBaseline> write_baseline_;  // start_write_logs()
  bool tcp_established_ = false;
  bool kill_exec_ = false;
  checkpoint::SourceContainer src_;
  std::vector<checkpoint::OutsideProcess> left_out_;
  // What a network namespace made on this host holds, taken before the
  // freeze; empty when the container has none of its own to compare (none,
  // one joined by path, --empty-ns network) or it could not be taken.
  std::string fresh_netns_;
  // The container's namespace watched from prepare_dump() on, so that
  // check_netns() reads at the freeze only what may have changed; used
  // once.
  std::optional<checkpoint::NetnsWatch> netns_watch_;
  // The destination takes a LateState (destination_takes_late_state).
  bool late_state_taken_ = false;
  // read_elf_files(), and whether the destination found them the same.
  std::optional<ElfFilesSeen> elf_seen_;
  bool elf_files_same_ = false;
  // The destination restores into a cgroup of the container's own path
  // (destination_cgroup()).
  bool same_cgroup_path_ = false;
  // The final dump's namespace whose sysctls late_state() reads, and
  // whether it moved empty (then crx carries every changed one).
  struct LateNetns {
    checkpoint::NetnsWatch watch;
    bool moves_empty = false;
  };
  std::optional<LateNetns> late_netns_;
  // The container made its own UTS and IPC namespaces (no user namespace).
  bool own_uts_ipc_ = false;
  // The IPC sysctls of a new namespace on this host, taken before the
  // freeze when the destination makes UTS and IPC namespaces anew and the
  // container has its own; nullopt otherwise (CRIU dumps them).
  std::optional<checkpoint::IpcSysctls> fresh_ipc_;
  std::optional<ReadyDump> ready_dump_;
  // The final dump's CRIU once it answered: it exits while the images
  // travel and the destination restores; waited for at destroy(),
  // resume() or when this side goes (StartedDump::run).
  std::unique_ptr<checkpoint::StartedDump> exiting_criu_;
  // What the destination's page images hold (page_dedup.hpp), kept across
  // this migration's rounds.
  bool page_dedup_ = true;
  bool pre_dump_read_ = false;
  bool zero_runs_ = false;
  bool page_compression_ = true;
  bool compress_ = false;
  PageHeaderLayout page_layout_ = PageHeaderLayout::Criu3;
  PageLedger ledger_;
  RoundStats last_round_;
};

class CriuDestination : public DestinationSide {
 public:
  explicit CriuDestination(container::GlobalOptions g);
  Acceptance accept(const Manifest& m) override;
  std::unique_ptr<PageSink> start_page_server(const std::string& round_dir, UniqueFd channel,
                                              bool zero_runs) override;
  bool can_fill_after_resume() override;
  // `criu lazy-pages` on a view of the final round (fill_plan.hpp,
  // lazy_pages.hpp), started gated on the view's pstree.img by
  // prepare_fill() and let go by start_fill().
  std::unique_ptr<ReadyFill> prepare_fill(const std::string& round_dir,
                                          const std::string& work_dir) override;
  std::unique_ptr<LazyPages> start_fill(const std::string& round_dir, const std::string& work_dir,
                                        uint64_t min_bytes,
                                        std::unique_ptr<ReadyFill> ahead) override;
  std::unique_ptr<LazyPages> start_lazy_pages(const std::string& round_dir,
                                              const std::string& work_dir,
                                              UniqueFd channel) override;
  // criu_prepared_restore.hpp
  std::unique_ptr<PreparedRestore> prepare_restore(const Manifest& m, const Acceptance& a,
                                                   const std::string& session_dir,
                                                   const std::string& work_dir) override;
  int restore(PreparedRestore& prepared, const std::string& images_dir, const Manifest& m,
              const std::function<void()>& hold, const std::function<void()>& resumed) override;
  void discard(const Manifest& m) noexcept override;

 private:
  container::GlobalOptions g_;
  std::set<std::string> restored_;
  // A restore through userfaultfd (--lazy, the fill after the resume)
  // works here: `criu check --feature uffd-noncoop`, asked once.
  bool uffd_noncoop();
  std::optional<bool> uffd_noncoop_;
};

}  // namespace crx::migrate
