// What the migration protocol needs from the machines at both ends. The
// real implementations drive CRIU and the container runtime
// (criu_sides.hpp); unit tests inject fakes to exercise the protocol and
// its rollback without CRIU.
#pragma once
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "checkpoint/criu_stats.hpp"
#include "common/error.hpp"
#include "common/unique_fd.hpp"
#include "migrate/page_ledger.hpp"
#include "migrate/protocol.hpp"

namespace crx::migrate {

// What one pre_dump or dump did: the page filter's counts and CRIU's own
// statistics (nullopt when CRIU left none).
struct RoundStats {
  PageDedupStats dedup;
  std::optional<checkpoint::CriuDumpStats> criu;
  // Final dump: the container's own network namespace was as a new one
  // and moved as CRIU's empty namespace (checkpoint/fresh_netns.hpp).
  bool netns_moved_empty = false;
  // Network sysctls crx carried itself (CriuSource::check_netns).
  size_t net_sysctls_carried = 0;
  // Final dump: the namespace was read before the freeze and nothing of
  // its configuration was announced changed since (checkpoint::NetnsWatch):
  // only its sysctls were read in the frozen window.
  bool netns_read_ahead = false;
  // Final dump: the namespace's sysctls were left to late_state(), read
  // once the images were sent (SourceSide::late_state).
  bool net_sysctls_late = false;
  // Final dump: the container's UTS and IPC namespaces were left out of
  // the images; crx carries what they held (checkpoint/uts_ipc_anew.hpp).
  bool uts_ipc_made_anew = false;
  // The final dump left the container's cgroup to the destination's
  // (CriuSource::cgroup_left_to_destination).
  bool cgroup_left_to_destination = false;
  // Final dump with ParentPages::Check: the MRs' write logs said which
  // pages the device wrote since the first pre-copy round, and only those
  // of the pages CRIU took from the parent were checked; how many pages
  // they held (rdma/mr_writes.hpp). nullopt: every such page was checked.
  std::optional<uint64_t> device_written_pages;
  // Final dump: CRIU validated file sizes only, the build-ids having been
  // checked by the destination before the freeze (elf_files.hpp).
  bool build_ids_checked_ahead = false;
  // Final dump: its request was sent before the freeze, and CRIU had set
  // itself up by then (SourceSide::prepare_dump).
  bool dump_request_ahead = false;
  // Pre-dump: CRIU read the pages while the container ran
  // (checkpoint::DumpOptions::pre_dump_read).
  bool pre_dump_read = false;
};

// The final dump of a post-copy migration (--lazy) while it runs: CRIU
// writes every image but the lazy memory, which stays in the frozen source
// and is served over the page channel as the destination asks for it.
// Destroying it ends the serving (the channel is shut down) and waits for
// CRIU: what the rollback before the commit does.
class LazyDump {
 public:
  virtual ~LazyDump() = default;
  // Until every image but the lazy memory is in the images dir (CRIU's
  // post-dump): the destination can restore. Throws when the dump failed.
  virtual void wait_images(std::chrono::milliseconds timeout) = 0;
  // Until the destination holds every page and let go of the channel (the
  // lazy page server ended). Throws when it failed or took longer.
  virtual void wait_pages(std::chrono::milliseconds timeout) = 0;
};

// The destination's half of the lazy phase: CRIU's lazy-pages daemon,
// started on the final round's images before the restore, which it feeds
// through userfaultfd. Destroying it ends the daemon.
class LazyPages {
 public:
  virtual ~LazyPages() = default;
  // Until every page is in the restored tasks (the daemon ended well).
  // Throws when it failed: the tasks then lack memory and must be killed
  // before this object is destroyed (the pages they fault on would read as
  // zeros once the daemon's userfaultfd is gone, see runtime/migrate/README.md).
  virtual LazyStats wait(std::chrono::milliseconds timeout) = 0;
};

// What DestinationSide::prepare_fill() readied for start_fill() before the
// final images came; destroying it undoes it (a daemon started is killed).
class ReadyFill {
 public:
  virtual ~ReadyFill() = default;
};

// How the final dump takes the pages CRIU finds unchanged since the
// previous round (their soft-dirty bit clear).
enum class ParentPages {
  Trust,  // from the parent, as CRIU says
  // Read from the frozen tasks and compared with what the destination
  // holds; changed ones are sent (verbs: the NIC's writes set no bit,
  // task_memory.hpp). Without the page filter, the dump takes no parent.
  Check,
};

// The source container. Calls come in this order: pre_dump* freeze dump,
// then exactly one of destroy (destination confirmed) or resume (anything
// failed) — resume may also come without freeze/dump.
class SourceSide {
 public:
  virtual ~SourceSide() = default;
  // Memory to the connected page channel page_fd, other images into
  // images_dir; the container keeps running. parent: "../<round>" or "".
  virtual void pre_dump(const std::string& images_dir, const std::string& parent, int page_fd) = 0;
  // Before the freeze, with the final round's page channel open: what the
  // final dump() into images_dir with parent on page_fd can make ready
  // while the container runs (CriuSource: its CRIU started, and its request
  // sent with what the running container looks like, CRIU waiting before
  // it touches a task). dump() with other arguments, or no dump at all,
  // discards it. Pure: a wrapper that forgot to forward it would put that
  // work back into the frozen window.
  virtual void prepare_dump(const std::string& images_dir, const std::string& parent,
                            int page_fd) = 0;
  // Freezes the container (cgroup freezer): downtime starts.
  virtual void freeze() = 0;
  // The final dump; the container is left frozen, not killed.
  // parent_pages: whether CRIU's "unchanged since the parent" holds for
  // every page (ParentPages below).
  virtual void dump(const std::string& images_dir, const std::string& parent, int page_fd,
                    ParentPages parent_pages) = 0;
  // Rollback: the container runs on where it was.
  virtual void resume() = 0;
  // Commit: the destination runs the container; remove the source copy.
  virtual void destroy() = 0;
  // --lazy, instead of dump() (the container is frozen): the final dump
  // without its memory, which is served over page_fd (the LazyDump owns it).
  // Pure, as every call here: a wrapper side that forgot to forward it
  // would turn post-copy into a failure after the freeze.
  virtual std::unique_ptr<LazyDump> lazy_dump(const std::string& images_dir, UniqueFd page_fd) = 0;
  // Once, before the first round: whether the page channels of pre_dump
  // and dump will carry zero pages as their count (zero_runs.hpp), given
  // whether the destination decodes that. Only a side with a page filter
  // can; pure, so that a wrapper forwards it.
  virtual bool zero_runs(bool destination_decodes) = 0;
  // Once, after zero_runs(): whether those frames go compressed where that
  // makes them smaller (zero_runs.hpp, "Compressed"), given whether the
  // destination decodes that and the channel is encrypted. Pure, as above.
  virtual bool compress_pages(bool destination_decodes) = 0;
  // Once, before the first round: whether the destination makes the UTS
  // and IPC namespaces a final dump may leave out (Acceptance::
  // uts_ipc_anew). Pure as well: a wrapper that forgot it would leave them
  // to CRIU.
  virtual void destination_makes_uts_ipc(bool yes) = 0;
  // Once, before the first round: whether the destination takes a
  // LateState after the final images (Acceptance::late_state). Only then
  // may the final dump leave reading to late_state(). Pure as well.
  virtual void destination_takes_late_state(bool yes) = 0;
  // Once, before the first round: whether the destination found the
  // manifest's ELF files the same (Acceptance::elf_files_same). Only then
  // may the final dump leave CRIU's build-ids out. Pure as well: a wrapper
  // that forgot it would keep them in the frozen window.
  virtual void destination_has_elf_files(bool same) = 0;
  // Once, before the first round: the path in the cgroup2 hierarchy of the
  // cgroup the destination made for the restore (Acceptance::cgroup_path;
  // "" when it did not say). Only a destination cgroup of the container's
  // own path lets the final dump leave the cgroup out. Pure as well.
  virtual void destination_cgroup(const std::string& path) = 0;
  // After the final dump's images are sent, while the destination
  // restores: what the dump left to read until now (a network namespace's
  // sysctls: the frozen container cannot change them). Throws to roll
  // back. Pure as well: a wrapper that forgot it would lose them.
  virtual LateState late_state() = 0;
  // The last pre_dump's, dump's or lazy_dump's account, for the report
  // (a lazy dump's holds crx's choices only: no CRIU stats). Pure as well:
  // a wrapper that forgot it would report every round as unfiltered.
  virtual RoundStats last_round() const = 0;
};

// A running page server for one round; wait() throws when it failed.
class PageSink {
 public:
  virtual ~PageSink() = default;
  virtual void wait(std::chrono::milliseconds timeout) = 0;
  // Why the page stream broke, when the sink knows already ("" else).
  virtual std::string failure() const { return {}; }
  // How much of the round has reached this side so far: grows while the
  // page stream moves (the receiver's control-link waits go on while it
  // does); 0 when the sink cannot tell.
  virtual uint64_t bytes_so_far() const { return 0; }
};

// The part of a restore done before the final images arrive (the
// destination's cgroup, mounts, a waiting CRIU...; see runtime/migrate/README.md,
// "Prepared restore"). Its one owner is the receiver: destroying it before
// DestinationSide::restore() succeeded with it removes everything it made.
class PreparedRestore {
 public:
  virtual ~PreparedRestore() = default;
  // Restores from images_dir, once (DestinationSide::restore calls it).
  // `hold` and `resumed` as in DestinationSide::restore. Returns the
  // restored init's pid.
  virtual int run(const std::string& images_dir, const std::function<void()>& hold,
                  const std::function<void()>& resumed) = 0;
  // Before run(): the restore leaves the tasks' memory to the lazy-pages
  // daemon (DestinationSide::start_lazy_pages) instead of copying it in.
  virtual void restore_pages_lazily() = 0;
  // The path in the cgroup2 hierarchy of the cgroup made for the restore,
  // as CRIU names it (Acceptance::cgroup_path); "" on a host that is not
  // pure cgroup2.
  virtual std::string cgroup_path() const = 0;
  // Only from within run()'s `hold`: sets these network sysctls in the
  // restored tasks' namespace now, before they run (LateState). Throws
  // Error naming the sysctl that could not be set.
  virtual void set_net_sysctls(const std::map<std::string, std::string>& sysctls) = 0;
  // Only from within run()'s `hold`: saves the container's state as this
  // host's now, while the tasks wait (the receiver does it while the
  // Commit travels), so that `resumed` follows the resume at once. Until
  // the resume, a failure still undoes the restore and this with it.
  virtual void save_state_ahead() = 0;
};

class DestinationSide {
 public:
  virtual ~DestinationSide() = default;
  // Decides where the bundle comes from; throws Error to refuse (e.g. the
  // id exists here, or the bundle differs and no rootfs will be sent).
  virtual Acceptance accept(const Manifest& m) = 0;
  // Everything of the restore that needs only the bundle at a.bundle (there
  // by now): done while the source still runs. The final images will be in
  // a directory below session_dir; CRIU's work dir is work_dir (also the
  // lazy-pages daemon's, start_lazy_pages). Throws Error to refuse; nothing
  // is left then.
  virtual std::unique_ptr<PreparedRestore> prepare_restore(const Manifest& m, const Acceptance& a,
                                                           const std::string& session_dir,
                                                           const std::string& work_dir) = 0;
  // zero_runs: the channel comes in frames (RoundStart::zero_runs).
  virtual std::unique_ptr<PageSink> start_page_server(const std::string& round_dir,
                                                      UniqueFd channel, bool zero_runs) = 0;
  // Restores from images_dir with what prepare_restore() made. `hold` is
  // called once the restored tasks are ready to resume; if it throws, the
  // restore is undone and restore() rethrows. `resumed` is called after
  // it, at most once, when the container runs here as this host's: the
  // migration's downtime ends there. What restore() does after it (CRIU's
  // exit, clean-up) no longer undoes the restore; a side that cannot tell
  // that moment before it returns does not call it. Returns the restored
  // init's pid.
  virtual int restore(PreparedRestore& prepared, const std::string& images_dir, const Manifest& m,
                      const std::function<void()>& hold,
                      const std::function<void()>& resumed) = 0;
  // Removes whatever restore() left behind after a failure (state, cgroup).
  // Also after a failed lazy phase: it kills the running copy.
  virtual void discard(const Manifest& m) noexcept = 0;
  // Whether restored tasks can take their memory through userfaultfd here
  // (a pre-copy migration's pages filled after the resume).
  virtual bool can_fill_after_resume() = 0;
  // --lazy: the lazy-pages daemon for the final round's images, its pages
  // coming over channel, listening in the restore's work_dir (the one given
  // to prepare_restore); returns once restore() can connect to it.
  virtual std::unique_ptr<LazyPages> start_lazy_pages(const std::string& round_dir,
                                                      const std::string& work_dir,
                                                      UniqueFd channel) = 0;
  // Filled after the resume, readied ahead: called when the final round
  // opens before the freeze, for the round dir start_fill() will get. What
  // can be done without the final images (the daemon started and waiting
  // for them) is done here and handed to start_fill(); nullptr: nothing.
  virtual std::unique_ptr<ReadyFill> prepare_fill(const std::string& round_dir,
                                                  const std::string& work_dir) = 0;
  // Filled after the resume: decides which of the final round's pages the
  // restore leaves to a lazy-pages daemon here, with the pages the rounds
  // brought (fill_plan.hpp), and starts that daemon as start_lazy_pages
  // does, or lets the one prepare_fill() readied go on (`ahead`, may be
  // null). nullptr, with nothing changed, when that would be less than
  // min_bytes: the restore then copies every page itself.
  virtual std::unique_ptr<LazyPages> start_fill(const std::string& round_dir,
                                                const std::string& work_dir, uint64_t min_bytes,
                                                std::unique_ptr<ReadyFill> ahead) = 0;
};

}  // namespace crx::migrate
