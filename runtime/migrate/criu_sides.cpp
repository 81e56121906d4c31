#include "migrate/criu_sides.hpp"

#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sys/socket.h>

#include <chrono>
#include <condition_variable>
#include <exception>
#include <mutex>
#include <optional>
#include <thread>
#include <utility>

#include "checkpoint/carried_state.hpp"
#include "common/child_process.hpp"
#include "checkpoint/criu_rpc.hpp"
#include "checkpoint/conntrack_netlink.hpp"
#include "checkpoint/fresh_netns.hpp"
#include "checkpoint/network_lock.hpp"
#include "checkpoint/unix_sockets.hpp"
#include "common/error.hpp"
#include "common/fs.hpp"
#include "common/log.hpp"
#include "container/lifecycle.hpp"
#include "cgroup/cgroup.hpp"
#include "cgroup/paths.hpp"
#include "spec/spec.hpp"
#include "migrate/criu_prepared_restore.hpp"
#include "migrate/destination_checks.hpp"
#include "migrate/fill_plan.hpp"
#include "migrate/lazy_pages.hpp"
#include "migrate/manifest.hpp"
#include "migrate/page_dedup.hpp"
#include "migrate/page_relay.hpp"
#include "migrate/ram_dir.hpp"
#include "migrate/rootfs_stream.hpp"
#include "migrate/task_memory.hpp"
#include "migrate/written_task_memory.hpp"
#include "rdma/container_verbs.hpp"
#include "migrate/tcp_hush.hpp"
#include "rdma/verbs_scan.hpp"
#include "state/store.hpp"

namespace crx::migrate {
namespace {

UniqueFd open_dir(const std::string& path) {
  mkdir_p(path, 0700);
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd) throw_errno("open " + path);
  return fd;
}

// `criu page-server` on an authenticated, connected socket; one session.
// A channel in kernel TLS reaches CRIU through a PageRelay (page_relay.hpp
// says why): the pages make one pass through crx on this side.
class CriuPageSink : public PageSink {
 public:
  // zero_runs: the channel comes in frames, which only the relay decodes
  // (zero_runs.hpp); then it runs on a clear-text channel too.
  CriuPageSink(const std::string& dir, UniqueFd channel, bool zero_runs) : dir_(dir) {
    if (zero_runs || is_kernel_tls_socket(channel.get())) {
      relay_ = std::make_unique<PageRelay>(
          std::move(channel), PageRelay::Mode::Splice, PageRelay::OnEnd::Close,
          zero_runs ? PageRelay::Framing::ZeroRuns : PageRelay::Framing::None);
      channel = relay_->take_peer_end();
    }
    std::string fd = std::to_string(channel.get());
    child_ = spawn({checkpoint::criu_binary(), "page-server", "--images-dir", dir, "--ps-socket", fd, "--log-file",
                    dir + ".page-server.log", "-v4"},
                   {.keep_fds = {channel.get()}, .quiet = true});
    // criu holds it now; our copy closes here
  }
  ~CriuPageSink() override {
    if (relay_) relay_->stop();
  }
  void wait(std::chrono::milliseconds timeout) override {
    auto until = std::chrono::steady_clock::now() + timeout;
    int status = 0;
    while (!child_.try_wait(&status)) {
      if (std::chrono::steady_clock::now() > until) {
        child_.kill_and_wait();
        if (relay_) relay_->stop();
        throw Error("criu page-server did not finish within " +
                    std::to_string(timeout.count() / 1000) + " s");
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    std::string relay_error;
    if (relay_) {
      relay_error = relay_->error();  // what broke the stream before criu ended
      relay_->stop();
      if (relay_error.empty()) relay_error = relay_->error();
    }
    if (status != 0) {
      std::string tail;
      try {
        tail = checkpoint::criu_log_tail(read_file(dir_ + ".page-server.log"));
      } catch (const std::exception&) {
      }
      std::string criu = "criu page-server " + describe_wait_status(status) +
                         (tail.empty() ? "" : ": " + tail);
      if (!relay_error.empty()) throw Error(relay_error + " (" + criu + ")");
      throw Error(criu);
    }
    if (!relay_error.empty()) throw Error(relay_error);
  }
  std::string failure() const override { return relay_ ? relay_->error() : std::string(); }
  // kTLS: what the relay took from the network; clear text (CRIU reads
  // the channel itself): the page images CRIU has written so far.
  uint64_t bytes_so_far() const override {
    return relay_ ? relay_->bytes_from_network() : page_image_bytes(dir_);
  }

 private:
  std::string dir_;
  std::unique_ptr<PageRelay> relay_;
  ChildProcess child_;
};

// The source's half of a post-copy migration. criu_dump with lazy pages
// writes every image but the lazy memory, tells its client so (the
// post-dump notification, after it flushed and closed the images), then
// serves the memory from the frozen tasks on the page channel until the
// destination's lazy-pages daemon says it is done; only then does the call
// return. The migration must go on meanwhile (send the images, restore,
// commit), so the call runs in a thread this object owns. The thread is
// the only user of the CRIU child (criu_rpc's SwrkSession, in the call).
class CriuLazyDump : public LazyDump {
 public:
  // namespaces: the owners of o.criu_namespace_fds, kept until CRIU is done.
  CriuLazyDump(checkpoint::DumpOptions o, UniqueFd images, UniqueFd work, UniqueFd page_fd,
               std::vector<UniqueFd> namespaces)
      : images_(std::move(images)), work_(std::move(work)), page_fd_(std::move(page_fd)),
        namespaces_(std::move(namespaces)) {
    o.images_dir_fd = images_.get();
    o.work_dir_fd = work_.get();
    o.lazy_pages = true;
    o.lazy_page_socket = page_fd_.get();
    o.page_server.reset();  // the non-lazy pages go into the images
    o.notify_scripts = true;
    thread_ = std::thread([this, o] { run(o); });
  }
  ~CriuLazyDump() override {
    // CRIU's page server reads the end of the stream and ends its session
    // (a rollback: the destination never resumed); the frozen tasks are
    // let go before the caller thaws or kills them.
    ::shutdown(page_fd_.get(), SHUT_RDWR);
    if (thread_.joinable()) thread_.join();
  }
  void wait_images(std::chrono::milliseconds timeout) override {
    std::unique_lock l(mutex_);
    if (!cv_.wait_for(l, timeout, [&] { return images_ready_ || finished_; }))
      throw Error("criu dump did not write its images within " +
                  std::to_string(timeout.count() / 1000) + " s");
    if (error_) std::rethrow_exception(error_);
  }
  void wait_pages(std::chrono::milliseconds timeout) override {
    std::unique_lock l(mutex_);
    if (!cv_.wait_for(l, timeout, [&] { return finished_; }))
      throw Error("the destination did not fetch every page within " +
                  std::to_string(timeout.count() / 1000) + " s");
    if (error_) std::rethrow_exception(error_);
  }

 private:
  void run(const checkpoint::DumpOptions& o) {
    std::exception_ptr error;
    try {
      checkpoint::criu_dump(o, [this](checkpoint::Notification& n) {
        if (n.script != "post-dump") return;
        std::lock_guard l(mutex_);
        images_ready_ = true;
        cv_.notify_all();
      });
    } catch (...) {
      error = std::current_exception();
    }
    std::lock_guard l(mutex_);
    error_ = error;
    finished_ = true;
    cv_.notify_all();
  }

  UniqueFd images_, work_, page_fd_;
  std::vector<UniqueFd> namespaces_;
  std::mutex mutex_;
  std::condition_variable cv_;
  bool images_ready_ = false, finished_ = false;
  std::exception_ptr error_;
  std::thread thread_;
};

}  // namespace

CriuSource::CriuSource(container::GlobalOptions g, std::string id, checkpoint::CriuFlags flags,
                       bool kill_exec)
    : g_(std::move(g)), id_(std::move(id)), tcp_established_(flags.tcp_established),
      kill_exec_(kill_exec) {
  src_ = checkpoint::prepare_source(g_, id_, flags);
  // The console (the pty master crx handed to the creator's
  // --console-socket) stays on this host: the restored terminal would have
  // nobody at the other end.
  if (src_.spec.process.terminal) {
    throw Error("container " + id_ + " has a terminal (process.terminal): its console stays on "
                "this host and cannot follow it; crx migrates containers without one");
  }
  check_processes();
  // The page server protocol's header follows CRIU's version (asked once,
  // before anything is frozen).
  auto v = checkpoint::criu_version();
  page_layout_ = page_header_layout(v.major, v.minor);
  const auto made_here = [&](const char* type) {
    const auto* ns = src_.spec.linux.find_namespace(type);
    return ns && ns->path.empty();
  };
  own_uts_ipc_ = made_here("uts") && made_here("ipc") && !src_.spec.linux.find_namespace("user");
  const auto* netns = src_.spec.linux.find_namespace("network");
  // CRIU's dump of the namespace would load conntrack's netlink module in
  // the frozen window; loaded now, before the fingerprint below, whose
  // sysctls the module adds to (checkpoint/conntrack_netlink.hpp).
  if (netns) {
    try {
      checkpoint::load_conntrack_netlink();
    } catch (const Error& e) {
      log::debug(std::string("migrate: ") + e.what() + "; the final dump will ask again");
    }
  }
  if (netns && netns->path.empty() && !(src_.base.empty_ns & CLONE_NEWNET)) {
    // A new namespace's fingerprint, taken now, while the container runs:
    // the final dump compares the container's with it. Failing here only
    // means that CRIU saves the namespace with its tools, as before.
    try {
      fresh_netns_ = checkpoint::fresh_netns_fingerprint();
    } catch (const Error& e) {
      log::warn("migrate: " + id_ + "'s network namespace moves with CRIU's network tools: " +
                e.what());
    }
    // Moved as a new one, the namespace is where the final dump's CRIU
    // runs (criu_in_container_namespaces): its loopback is down, so CRIU must
    // find its kernel cache made.
    if (!fresh_netns_.empty()) checkpoint::criu_ensure_kerndat_cache();
  }
}

CriuSource::NetnsAtFreeze CriuSource::check_netns(bool sysctls_later) {
  NetnsAtFreeze out;
  late_netns_.reset();
  if (fresh_netns_.empty()) return out;
  const auto t0 = std::chrono::steady_clock::now();
  checkpoint::NetnsComparison c;
  std::optional<checkpoint::NetnsWatch> watch = std::exchange(netns_watch_, std::nullopt);
  bool later = sysctls_later && watch;
  try {
    using Sysctls = checkpoint::NetnsWatch::Sysctls;
    c = watch ? watch->compare(fresh_netns_, later ? Sysctls::Later : Sysctls::Now)
              : checkpoint::compare_netns_with_fresh(src_.pid, fresh_netns_);
    if (later && c.config_difference) {
      // CRIU saves this one: its dump locks and walks the namespace, and
      // what that loads adds sysctls of its own (nf_conntrack's, seen in
      // a guest), which a later read would take for the container's.
      c.changed_sysctls = watch->changed_sysctls(fresh_netns_);
      later = false;
    }
  } catch (const Error& e) {
    log::warn("migrate: " + id_ + "'s network namespace moves with CRIU's network tools, " +
              "without the sysctls CRIU does not save: " + e.what());
    return out;
  }
  out.moves_empty = !c.config_difference;
  out.read_ahead = watch && c.config_read_ahead;
  out.sysctls_late = later;
  // Moved empty, the namespace takes none of its sysctls along; kept, CRIU
  // restores its devices' conf entries itself.
  for (auto& [path, value] : c.changed_sysctls)
    if (out.moves_empty || !checkpoint::criu_carries_sysctl(path)) out.carried[path] = value;
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::steady_clock::now() - t0).count();
  std::string how = "compared in " + std::to_string(ms) + " ms";
  if (later) {
    how += ", its sysctls left until the images are sent";
  } else if (watch) {
    how += ", " + std::to_string(watch->sysctls_kept()) +
           " sysctls read through fds opened before the freeze";
    how += c.config_read_ahead ? ", its configuration read then, unchanged since"
                               : ", its configuration read again: it changed";
  }
  const std::string fate = out.moves_empty
                               ? "is configured as a new one: it moves empty"
                               : "was configured (" + *c.config_difference + "): CRIU saves it";
  log::debug("migrate: " + id_ + "'s network namespace " + fate + "; " +
             std::to_string(out.carried.size()) + " sysctls carried by crx (" + how + ")");
  if (later) late_netns_.emplace(LateNetns{std::move(*watch), out.moves_empty});
  return out;
}

LateState CriuSource::late_state() {
  LateState out;
  if (!late_netns_) return out;
  const LateNetns late = std::move(*late_netns_);
  late_netns_.reset();
  const auto t0 = std::chrono::steady_clock::now();
  // Failing, the migration rolls back: the namespace moved without them.
  for (auto& [path, value] : late.watch.changed_sysctls(fresh_netns_))
    if (late.moves_empty || !checkpoint::criu_carries_sysctl(path)) out.net_sysctls[path] = value;
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::steady_clock::now() - t0).count();
  log::debug("migrate: " + id_ + "'s network sysctls read after the images were sent, in " +
             std::to_string(ms) + " ms: " + std::to_string(out.net_sysctls.size()) +
             " carried by crx");
  return out;
}

std::vector<ElfFile> CriuSource::read_elf_files() {
  const auto t0 = std::chrono::steady_clock::now();
  elf_seen_.emplace(container_pids(), src_.spec, src_.state.bundle);
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::steady_clock::now() - t0).count();
  log::debug("migrate: " + id_ + " maps or holds " + std::to_string(elf_seen_->files().size()) +
             " ELF files with a build-id, read in " + std::to_string(ms) + " ms");
  return elf_seen_->files();
}

bool CriuSource::build_ids_checked() const {
  if (!elf_files_same_ || !elf_seen_) return false;
  const auto t0 = std::chrono::steady_clock::now();
  const bool covered = elf_seen_->covers(container_pids());
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::steady_clock::now() - t0).count();
  log::debug("migrate: " + id_ + "'s files now " +
             (covered ? "were all read with the manifest" : "include one not read with it") +
             " (" +
             std::to_string(ms) + " ms): CRIU validates " +
             (covered ? "their sizes only" : "their build-ids"));
  return covered;
}

void CriuSource::destination_makes_uts_ipc(bool yes) {
  fresh_ipc_.reset();
  if (!yes || !own_uts_ipc_) return;
  // Taken now, while the container runs; failing, CRIU dumps the
  // namespaces as before.
  try {
    fresh_ipc_ = checkpoint::fresh_ipc_sysctls();
  } catch (const Error& e) {
    log::warn("migrate: " + id_ + "'s UTS and IPC namespaces are dumped by CRIU: " + e.what());
  }
}

std::optional<checkpoint::UtsIpcContent> CriuSource::check_uts_ipc() const {
  if (!fresh_ipc_) return std::nullopt;
  try {
    std::vector<UniqueFd> ns = container_namespaces({.uts_ipc = true});
    std::string why;
    auto c = checkpoint::read_uts_ipc(ns[0].get(), ns[1].get(), *fresh_ipc_, &why);
    if (!c) log::debug("migrate: " + id_ + "'s IPC namespace is dumped by CRIU: " + why);
    return c;
  } catch (const Error& e) {
    log::warn("migrate: " + id_ + "'s UTS and IPC namespaces are dumped by CRIU: " + e.what());
    return std::nullopt;
  }
}

CriuSource::NamespacesAnew CriuSource::namespaces_anew_ahead() const {
  NamespacesAnew out;
  if (!fresh_netns_.empty()) {
    out.net = true;  // unwatched: the freeze's comparison decides alone
    if (netns_watch_) {
      try {
        using Sysctls = checkpoint::NetnsWatch::Sysctls;
        out.net = !netns_watch_->compare(fresh_netns_, Sysctls::Later).config_difference;
      } catch (const Error& e) {
        log::debug("migrate: " + id_ + "'s network namespace not compared ahead: " + e.what());
      }
    }
  }
  out.uts_ipc = check_uts_ipc().has_value();
  return out;
}

std::vector<UniqueFd> CriuSource::criu_in_container_namespaces(checkpoint::DumpOptions& o,
                                                               NamespacesAnew anew) const {
  // CRIU runs in the container's namespaces that move as new ones and so
  // leaves them alone. The network namespace: no lock (nothing in it to
  // guard: no address, no route, so no connection), no dump; the
  // destination makes a new one (CarriedState::new_netns_outside_images).
  // Its iptables method is CRIU's no-op for a namespace it does not dump;
  // nftables would still make a table for connection locks (and cost
  // 0.05-0.09 s to set up and take down in a guest under load). The UTS
  // and IPC namespaces: not forked into and dumped (uts_ipc_anew.hpp).
  std::vector<UniqueFd> fds = container_namespaces(anew);
  for (const UniqueFd& fd : fds) o.criu_namespace_fds.push_back(fd.get());
  if (anew.net) o.nftables_network_lock = false;
  return fds;
}

std::vector<UniqueFd> CriuSource::container_namespaces(NamespacesAnew anew) const {
  std::vector<const char*> types;
  if (anew.net) types.push_back("net");
  if (anew.uts_ipc) types.insert(types.end(), {"uts", "ipc"});
  std::vector<UniqueFd> out;
  for (const char* type : types) {
    const std::string path = "/proc/" + std::to_string(src_.pid) + "/ns/" + type;
    UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd) {
      throw_errno("the " + std::string(type) + " namespace of container " + id_ + " (" + path +
                  ")");
    }
    out.push_back(std::move(fd));
  }
  return out;
}

void CriuSource::prepare_dump(const std::string& images_dir, const std::string& parent,
                              int page_fd) {
  ready_dump_.reset();
  netns_watch_.reset();
  if (!fresh_netns_.empty()) {
    // What of the comparison at the freeze needs no frozen container.
    // Failing, the comparison is all done at the freeze, as without.
    try {
      netns_watch_.emplace(src_.pid);
    } catch (const Error& e) {
      log::warn("migrate: " + id_ + "'s network namespace is compared at the freeze only: " +
                e.what());
    }
  }
  ReadyDump r;
  r.images_dir = images_dir;
  r.page_fd = page_fd;
  checkpoint::StartedDump::Setup s;
  if (page_dedup_) {
    r.relay_ends = PageDedupRelay::Ends::make();
    s.inherit_fds.push_back(r.relay_ends->criu.get());
  } else {
    s.inherit_fds.push_back(page_fd);
  }
  r.images = open_dir(images_dir);
  r.work = open_dir(images_dir + ".work");
  r.output.reset(::openat(r.work.get(), "dump.log", O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600));
  if (!r.output) throw_errno("open " + images_dir + ".work/dump.log");
  s.output_fd = r.output.get();
  const NamespacesAnew anew = namespaces_anew_ahead();
  r.namespaces = container_namespaces(anew);
  for (const UniqueFd& fd : r.namespaces) s.namespace_fds.push_back(fd.get());
  r.criu = std::make_unique<checkpoint::StartedDump>(s);
  // Its request now, with what the running container gives: CRIU sets
  // itself up while the container runs and waits at its pre-dump, before
  // it looks at a task. The frozen window then starts where CRIU seizes
  // the tasks (runtime/migrate/README.md, "The final dump's request sent
  // before the freeze").
  const auto t0 = std::chrono::steady_clock::now();
  checkpoint::DumpOptions o = dump_options(r.images.get(), r.work.get(), parent, "dump.log",
                                           checkpoint::MountsChoice::Ahead, images_dir);
  std::vector<UniqueFd> namespaces = criu_in_container_namespaces(o, anew);
  o.page_server = checkpoint::PageServerTarget{"", 0, s.inherit_fds.front()};
  const pid_t pid = r.criu->pid();
  r.request_ahead = r.criu->send_ahead(o);
  if (!r.request_ahead) r.criu.reset();
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::steady_clock::now() - t0).count();
  const std::string what = r.request_ahead
                                ? "waits at its pre-dump, its request sent in " +
                                      std::to_string(ms) + " ms"
                                : "is gone: the request did not fit it";
  log::debug("migrate: " + id_ + ": the final dump's CRIU (pid " + std::to_string(pid) + ") " +
             what);
  ready_dump_ = std::move(r);
}

void CriuSource::write_carried_state(
    const std::string& images_dir, const NetnsAtFreeze& net,
    const std::optional<checkpoint::UtsIpcContent>& uts_ipc) const {
  checkpoint::CarriedState c = checkpoint::carried_state_of(src_.state, src_.paused);
  c.net_sysctls = net.carried;
  c.new_netns_outside_images = net.moves_empty;
  c.uts_ipc_outside_images = uts_ipc;
  checkpoint::write_carried_state(images_dir, c);
}

checkpoint::DumpOptions CriuSource::dump_options(
    int images_fd, int work_fd, const std::string& parent, const char* log,
    std::optional<checkpoint::MountsChoice> final_dump, const std::string& images_dir) const {
  checkpoint::DumpOptions o = src_.base;
  o.log_file = log;
  o.parent_img = parent;
  o.track_mem = true;
  o.leave_running = true;  // pre-dump: runs on; dump: stays frozen (cgroup)
  o.images_dir_fd = images_fd;
  o.work_dir_fd = work_fd;
  // A final dump's tmpfs mounts can be made again at the destination
  // instead of packed by CRIU: chosen frozen (the files of one that holds
  // any go into the images dir, carried_tmpfs.hpp), or ahead for a request
  // sent before the freeze (nothing packed; made again frozen).
  // --pre-dump-mode read: a pre-copy round stops the container only for its
  // pagemap, and its pages are read while it runs on. Only into the page
  // filter's copying socket: a stream one would carry later reads' bytes in
  // them (message_reader.hpp).
  o.pre_dump_read = !final_dump && page_dedup_ && pre_dump_read_;
  if (final_dump) {
    checkpoint::add_recreated_mounts(o, src_, images_dir, *final_dump);
    o.plugins = needs_verbs_plugin();
    o.validate_file_sizes_only = build_ids_checked();
    if (cgroup_left_to_destination()) o.manage_cgroups_mode = checkpoint::CgroupMode::Ignore;
  }
  // A migration's dumps lift their lock themselves (network_lock.hpp).
  o.nftables_network_lock = checkpoint::nftables_lock_for_migration(src_.spec, tcp_established_);
  return o;
}

void CriuSource::run_dump(
    void (*criu_call)(const checkpoint::DumpOptions&, const checkpoint::NotifyHandler&),
    const std::string& images_dir, std::string parent, int page_fd, const char* log,
    bool final_dump, ParentPages parent_pages, NamespacesAnew anew) {
  // Checking CRIU's parent pages is the page filter's work: without it, the
  // dump takes no parent and CRIU sends every page.
  const bool check_parent = parent_pages == ParentPages::Check && !parent.empty();
  // The CRIU prepare_dump() started, if it was for this dump; whatever
  // happens, it is used once or not at all.
  std::optional<ReadyDump> ready = std::exchange(ready_dump_, std::nullopt);
  if (ready && (!final_dump || ready->images_dir != images_dir || ready->page_fd != page_fd))
    ready.reset();
  if (check_parent && !page_dedup_) parent.clear();
  const std::string work_dir = images_dir + ".work";  // CRIU's logs and stats-dump
  // A request sent ahead named these dirs' fds: the same ones here.
  UniqueFd images = ready ? std::move(ready->images) : open_dir(images_dir);
  UniqueFd work = ready ? std::move(ready->work) : open_dir(work_dir);
  checkpoint::DumpOptions o =
      dump_options(images.get(), work.get(), parent, log,
                   final_dump ? std::optional(checkpoint::MountsChoice::Frozen) : std::nullopt,
                   images_dir);
  std::vector<UniqueFd> namespaces = criu_in_container_namespaces(o, anew);
  // CRIU writes its pages through the filter that leaves out what the
  // destination holds already (page_dedup.hpp); the relay owns a copy of
  // the channel, the caller keeps its own.
  last_round_ = {};
  last_round_.build_ids_checked_ahead = o.validate_file_sizes_only;
  last_round_.cgroup_left_to_destination =
      final_dump && o.manage_cgroups_mode == checkpoint::CgroupMode::Ignore;
  last_round_.pre_dump_read = !final_dump && o.pre_dump_read;
  std::optional<PageDedupRelay> dedup;
  std::optional<ProcTaskMemory> memory;
  std::optional<WrittenTaskMemory> written;
  TaskMemory* checked = nullptr;
  if (page_dedup_) {
    // The container is frozen (check_parent is for the final dump only):
    // its processes stay what they are now.
    if (check_parent) {
      memory.emplace(container_pids(), src_.pid);
      checked = &*memory;
      if (auto pages = device_writes(*memory)) {
        uint64_t n = 0;
        for (const auto& [vpid, ranges] : *pages)
          for (const auto& [first, end] : ranges) n += (end - first) / 4096;
        last_round_.device_written_pages = n;
        written.emplace(*memory, std::move(*pages));
        checked = &*written;
      }
    }
    int copy = ::fcntl(page_fd, F_DUPFD_CLOEXEC, 0);
    if (copy < 0) throw_errno("duplicating the page channel");
    dedup.emplace(ledger_, UniqueFd(copy), page_layout_,
                  ready && ready->relay_ends
                      ? std::move(*ready->relay_ends)
                      : PageDedupRelay::Ends::make(o.pre_dump_read
                                                       ? PageDedupRelay::Splice::Copying
                                                       : PageDedupRelay::Splice::ByReference),
                  !parent.empty(), checked, zero_runs_, compress_);
    page_fd = dedup->criu_end();
  }
  o.page_server = checkpoint::PageServerTarget{"", 0, page_fd};
  log::debug("migrate: " + id_ + ": CRIU's " + log + " begins");
  // The CRIU started ahead runs the dump when its request fits: the one
  // sent ahead, if any, must be this very request (StartedDump::run). A
  // CRIU that does not fit (the choices at the freeze differ from those
  // ahead, say) is let go by run(); the dump then starts its own.
  const bool ahead = ready && ready->request_ahead;
  try {
    if (ready && ready->criu && ready->criu->run(o)) {
      exiting_criu_ = std::move(ready->criu);  // its exit is waited for later
      last_round_.dump_request_ahead = ahead;
    } else {
      if (ahead)
        log::debug("migrate: " + id_ + ": the request sent ahead is not the frozen container's: "
                   "its CRIU was let go, another one dumps");
      criu_call(o, {});
    }
  } catch (const Error& e) {
    // A filter that failed closes CRIU's end, and CRIU fails with a broken
    // pipe: the filter's failure is the cause.
    if (std::optional<Error> filter = dedup ? dedup->failure() : std::nullopt)
      throw Error(std::string(filter->what()) + "; then " + e.what(), filter->cause(),
                  filter->sys_errno());
    throw;
  }
  log::debug("migrate: " + id_ + ": CRIU's " + log + " ended");
  if (dedup) last_round_.dedup = dedup->finish();
  last_round_.criu = checkpoint::read_criu_dump_stats(work_dir);
  last_round_.netns_moved_empty = anew.net;
  last_round_.uts_ipc_made_anew = anew.uts_ipc;
}

std::vector<pid_t> CriuSource::container_pids() const {
  const auto& cg = src_.state.cgroup;
  if (cg.is_null() || cg.empty())
    throw Error("container " + id_ + " has no cgroup on record: its processes cannot be listed",
                Cause::NotFound);
  return cgroup::Cgroup::load(cg).pids();
}

void CriuSource::start_write_logs() {
  write_baseline_.reset();
  try {
    auto verbs = rdma::ContainerVerbs::of_processes(container_pids());
    if (verbs.empty()) return;
    write_baseline_.emplace(verbs.mr_writes(true));
  } catch (const std::exception& e) {
    log::warn("migrate: " + id_ + ": the MRs' write logs cannot be started (" + e.what() +
              "); the final dump checks every page CRIU takes from the parent");
  }
}

std::optional<std::unordered_map<uint64_t, rdma::PageRanges>> CriuSource::device_writes(
    const ProcTaskMemory& memory) const {
  if (!write_baseline_) return std::nullopt;
  try {
    auto by_host_pid = write_baseline_->written_since(
        rdma::ContainerVerbs::of_processes(container_pids()).mr_writes(false));
    if (!by_host_pid) {
      log::debug("migrate: " + id_ +
                 ": the MRs' write logs cannot tell what the device wrote; every page is checked");
      return std::nullopt;
    }
    std::unordered_map<uint64_t, rdma::PageRanges> by_vpid;
    for (const auto& [vpid, host] : memory.host_pids())
      if (auto it = by_host_pid->find(host); it != by_host_pid->end())
        by_vpid[vpid] = it->second;
    return by_vpid;
  } catch (const std::exception& e) {
    log::warn("migrate: " + id_ + ": the MRs' write logs cannot be read (" + e.what() +
              "); every page CRIU takes from the parent is checked");
    return std::nullopt;
  }
}

void CriuSource::destination_cgroup(const std::string& path) {
  same_cgroup_path_ = false;
  const auto& saved = src_.state.cgroup;
  if (path.empty() || saved.is_null() || saved.empty()) return;
  try {
    const std::string here =
        cgroup::criu_v2_path(cgroup::parse_mountinfo(read_file("/proc/self/mountinfo")),
                             cgroup::Cgroup::load(saved).dirs());
    same_cgroup_path_ = !here.empty() && here == path;
  } catch (const Error& e) {
    log::debug("migrate: " + id_ + "'s cgroup path is not known here: " + e.what());
  }
}

bool CriuSource::cgroup_left_to_destination() const {
  if (src_.base.manage_cgroups_mode || !same_cgroup_path_) return false;
  try {
    return !cgroup::Cgroup::load(src_.state.cgroup).has_children();
  } catch (const Error& e) {
    log::debug("migrate: " + id_ + "'s cgroup is walked by CRIU: " + e.what());
    return false;
  }
}

bool CriuSource::needs_verbs_plugin() const {
  // Asked of the frozen container: no task of it can open a verbs context
  // before CRIU is done. A pre-dump (running tasks) always loads it.
  return rdma::any_holds_verbs(container_pids());
}

void CriuSource::pre_dump(const std::string& images_dir, const std::string& parent, int page_fd) {
  // The first round: what the device writes from now on is logged, for
  // the final dump's check of the pages it takes from the parent.
  if (parent.empty() && page_dedup_) start_write_logs();
  // A pre-dump must not leave the container frozen: CRIU restores the
  // freezer state it found, which is "running" here.
  run_dump(checkpoint::criu_pre_dump, images_dir, parent, page_fd, "pre-dump.log", false,
           ParentPages::Trust, NamespacesAnew{});
}

void CriuSource::freeze() {
  const auto t0 = std::chrono::steady_clock::now();
  checkpoint::freeze_container(src_);
  const auto t1 = std::chrono::steady_clock::now();
  // Frozen: the set cannot change any more. A refusal here rolls back
  // (resume() thaws the source).
  check_processes();
  const auto ms = [](auto a, auto b) {
    return std::to_string(std::chrono::duration_cast<std::chrono::milliseconds>(b - a).count());
  };
  log::debug("migrate: " + id_ + " frozen in " + ms(t0, t1) + " ms; its processes and unix " +
             "sockets checked in " + ms(t1, std::chrono::steady_clock::now()) + " ms");
}

void CriuSource::check_processes() {
  checkpoint::ProcessSplit processes = checkpoint::check_outside_processes(src_, kill_exec_);
  left_out_ = processes.outside;
  checkpoint::check_unix_sockets(id_, src_.pid, processes.in_tree_pids(), src_.base.ext_unix_sk);
}

void CriuSource::record_netns(const NetnsAtFreeze& net) {
  last_round_.net_sysctls_carried = net.carried.size();
  last_round_.netns_read_ahead = net.read_ahead;
  last_round_.net_sysctls_late = net.sysctls_late;
}

void CriuSource::dump(const std::string& images_dir, const std::string& parent, int page_fd,
                      ParentPages parent_pages) {
  // The cgroup is frozen already; with freeze_cgroup + leave_running CRIU
  // puts it back to frozen after the dump instead of letting it run.
  // What CRIU does not carry goes with the images (streamed like them).
  const NetnsAtFreeze net = check_netns(late_state_taken_);
  const std::optional<checkpoint::UtsIpcContent> uts_ipc = check_uts_ipc();
  write_carried_state(images_dir, net, uts_ipc);
  run_dump(checkpoint::criu_dump, images_dir, parent, page_fd, "dump.log", true, parent_pages,
           {.net = net.moves_empty, .uts_ipc = uts_ipc.has_value()});
  record_netns(net);
}

std::unique_ptr<LazyDump> CriuSource::lazy_dump(const std::string& images_dir, UniqueFd page_fd) {
  // Read now: the lazy dump's CRIU serves pages while the destination restores.
  const NetnsAtFreeze net = check_netns(false);
  const std::optional<checkpoint::UtsIpcContent> uts_ipc = check_uts_ipc();
  write_carried_state(images_dir, net, uts_ipc);
  UniqueFd images = open_dir(images_dir);
  UniqueFd work = open_dir(images_dir + ".work");
  checkpoint::DumpOptions o = src_.base;
  o.log_file = "dump.log";
  // Frozen (cgroup) before CRIU starts: with leave_running CRIU leaves it
  // frozen after the lazy phase too, for destroy() or the operator.
  o.leave_running = true;
  checkpoint::add_recreated_mounts(o, src_, images_dir);
  o.plugins = needs_verbs_plugin();
  o.validate_file_sizes_only = build_ids_checked();
  const bool cgroup_left = cgroup_left_to_destination();
  if (cgroup_left) o.manage_cgroups_mode = checkpoint::CgroupMode::Ignore;
  std::vector<UniqueFd> namespaces =
      criu_in_container_namespaces(o, {.net = net.moves_empty, .uts_ipc = uts_ipc.has_value()});
  // What crx chose for this dump, for the report (CRIU's own account comes
  // only with the lazy phase's end, and is not read).
  last_round_ = {};
  record_netns(net);
  last_round_.netns_moved_empty = net.moves_empty;
  last_round_.uts_ipc_made_anew = uts_ipc.has_value();
  last_round_.cgroup_left_to_destination = cgroup_left;
  last_round_.build_ids_checked_ahead = o.validate_file_sizes_only;
  return std::make_unique<CriuLazyDump>(std::move(o), std::move(images), std::move(work),
                                        std::move(page_fd), std::move(namespaces));
}

void CriuSource::resume() {
  ready_dump_.reset();  // a rollback before the dump: that CRIU goes
  exiting_criu_.reset();
  netns_watch_.reset();
  late_netns_.reset();
  if (src_.paused) return;  // paused before the migration: stays paused
  checkpoint::thaw_container(g_, id_);
}

void CriuSource::destroy() {
  exiting_criu_.reset();
  // The connections run on at the destination: the source's copies must
  // go without a FIN or RST (tcp_hush.hpp). Held until the tasks are gone.
  std::optional<SilencedTcpSockets> silenced;
  if (tcp_established_) {
    auto st = state::StateDir::open(g_.root, id_).load();
    if (!st.cgroup.is_null() && !st.cgroup.empty()) {
      silenced.emplace(cgroup::Cgroup::load(st.cgroup).pids());
      log::debug("silenced " + std::to_string(silenced->count()) + " TCP sockets of " + id_);
    }
  }
  checkpoint::kill_frozen_container(g_, id_);
  container::delete_container(g_, id_, true);
}

CriuDestination::CriuDestination(container::GlobalOptions g) : g_(std::move(g)) {}

Acceptance CriuDestination::accept(const Manifest& m) {
  if (path_exists(g_.root + "/" + m.id + "/state.json")) {
    throw Error("container " + m.id + " already exists on the destination");
  }
  // What would only fail the restore, after the source froze: refused now.
  // A CRIU missing or broken here has no version: the restore says so.
  HostVersions here = host_versions();
  check_not_older("kernel", here.kernel, m.kernel);
  check_not_older("CRIU", here.criu, m.criu_version);
  Acceptance a{m.bundle, false, false};
  if (m.lazy) {
    // Refused now rather than at the restore, after the source froze.
    if (!uffd_noncoop())
      throw Error("this destination cannot restore post-copy (--lazy): `criu check --feature "
                  "uffd-noncoop` fails here (a kernel without userfaultfd?)",
                  Cause::Unsupported);
    a.lazy = true;
  }
  std::optional<spec::Spec> config;
  if (path_exists(m.bundle + "/config.json")) {
    if (bundle_config_hash(m.bundle) != m.config_sha256)
      throw Error("bundle " + m.bundle + " on the destination has a different config.json");
    config = spec::load_spec(m.bundle);
  } else if (!m.send_rootfs) {
    throw Error("bundle " + m.bundle +
                " does not exist on the destination; migrate with --send-rootfs");
  } else {
    a.need_rootfs = true;
    if (!m.config_json.empty()) {
      auto j = nlohmann::json::parse(m.config_json, nullptr, false);
      if (j.is_discarded()) throw Error("the manifest's config.json is not JSON", Cause::Invalid);
      config = spec::parse_spec(j, "the manifest's config.json");
    }
  }
  if (config) {
    auto exists = [](const std::string& p) { return path_exists(p); };
    auto missing = missing_bind_sources(*config, exists);
    for (auto& d : missing_devices(*config, exists)) missing.push_back(std::move(d));
    for (auto& n : missing_namespace_paths(*config, exists)) missing.push_back(std::move(n));
    if (!missing.empty()) throw Error(missing.front());
  }
  // The libraries CRIU's restore would find different (its build-id check,
  // after the freeze): refused now. A rootfs still to come is the source's.
  if (config && !a.need_rootfs && m.elf_files) {
    auto checked = check_elf_files(*config, m.bundle, *m.elf_files, look_on_host);
    if (!checked.refusals.empty()) throw Error(checked.refusals.front(), Cause::Invalid);
    a.elf_files_same = checked.all_same;
  }
  return a;
}

bool CriuDestination::can_fill_after_resume() { return uffd_noncoop(); }

bool CriuDestination::uffd_noncoop() {
  // A restore through userfaultfd needs CRIU's non-cooperative events
  // (fork, mremap, unmap in the restored tasks); CRIU checks the kernel
  // for both.
  if (!uffd_noncoop_) {
    int status = -1;
    try {
      status = spawn({checkpoint::criu_binary(), "check", "--feature", "uffd-noncoop"},
                     {.quiet = true})
                   .wait();
    } catch (const std::exception&) {
    }
    uffd_noncoop_ = status == 0;
  }
  return *uffd_noncoop_;
}

std::unique_ptr<PageSink> CriuDestination::start_page_server(const std::string& round_dir,
                                                             UniqueFd channel, bool zero_runs) {
  return std::make_unique<CriuPageSink>(round_dir, std::move(channel), zero_runs);
}

std::unique_ptr<LazyPages> CriuDestination::start_lazy_pages(const std::string& round_dir,
                                                             const std::string& work_dir,
                                                             UniqueFd channel) {
  // The restore's work dir: the daemon listens there on a unix socket
  // CRIU's restore connects to by its relative name.
  return std::make_unique<CriuLazyPages>(round_dir, work_dir, std::move(channel),
                                         std::chrono::seconds(30));
}

namespace {

// The daemon of a fill, started before the final images came: the view
// dir it reads, made for it with the FIFO it waits on (CriuLazyPages::Gated).
struct CriuReadyFill : ReadyFill {
  std::string view;
  std::unique_ptr<CriuLazyPages> daemon;
  ParentPagemaps parents;  // read before the freeze; empty if they could not be
};

// The daemon's view of a round sits beside it, in the session dir.
std::string fill_view(const std::string& round_dir) { return round_dir + ".fill"; }

constexpr std::chrono::seconds kFillDaemonStart(30);

}  // namespace

std::unique_ptr<ReadyFill> CriuDestination::prepare_fill(const std::string& round_dir,
                                                         const std::string& work_dir) {
  auto r = std::make_unique<CriuReadyFill>();
  r->view = fill_view(round_dir);
  mkdir_p(r->view, 0700);
  const std::string gate = r->view + "/" + CriuLazyPages::kGate;
  if (::mkfifo(gate.c_str(), 0600) != 0) throw_errno("mkfifo " + gate);
  r->daemon =
      std::make_unique<CriuLazyPages>(CriuLazyPages::Gated{}, r->view, work_dir, kFillDaemonStart);
  log::debug("criu lazy-pages started ahead of the final images, waiting on " + gate);
  // ~2/3 of the plan's reading at three rounds, out of the frozen window.
  try {
    r->parents = read_parent_pagemaps(round_dir);
  } catch (const std::exception& e) {
    log::debug(std::string("the earlier rounds' pagemaps are read in the window: ") + e.what());
  }
  return r;
}

std::unique_ptr<LazyPages> CriuDestination::start_fill(const std::string& round_dir,
                                                       const std::string& work_dir,
                                                       uint64_t min_bytes,
                                                       std::unique_ptr<ReadyFill> ahead) {
  const std::string view = fill_view(round_dir);
  auto* ready = dynamic_cast<CriuReadyFill*>(ahead.get());
  if (ready && ready->view != view) ready = nullptr;
  // A view made ahead keeps its FIFO: plan_fill_after_resume() leaves a
  // name the view has already.
  FillPlan plan = plan_fill_after_resume(round_dir, view,
                                         (min_bytes + kLazyPageSize - 1) / kLazyPageSize,
                                         ready ? &ready->parents : nullptr);
  if (plan.pages == 0) return nullptr;  // and a daemon readied ahead is killed
  log::debug("filling " + std::to_string(plan.pages) + " pages after the resume");
  if (ready) {
    ready->daemon->open_gate(round_dir + "/" + CriuLazyPages::kGate, kFillDaemonStart);
    return std::move(ready->daemon);
  }
  return std::make_unique<CriuLazyPages>(view, work_dir, UniqueFd(), kFillDaemonStart);
}

std::unique_ptr<PreparedRestore> CriuDestination::prepare_restore(const Manifest& m,
                                                                  const Acceptance& a,
                                                                  const std::string& session_dir,
                                                                  const std::string& work_dir) {
  return std::make_unique<CriuPreparedRestore>(g_, m, a, session_dir, work_dir);
}

int CriuDestination::restore(PreparedRestore& prepared, const std::string& images_dir,
                             const Manifest& m, const std::function<void()>& hold,
                             const std::function<void()>& resumed) {
  int pid = prepared.run(images_dir, hold, resumed);
  restored_.insert(m.id);
  return pid;
}

void CriuDestination::discard(const Manifest& m) noexcept {
  // A failed restore cleans up after itself; only a container this receiver
  // restored (never one that was here before) is deleted.
  if (!restored_.count(m.id)) return;
  try {
    container::delete_container(g_, m.id, true);
    restored_.erase(m.id);
  } catch (const std::exception& e) {
    log::warn("discarding " + m.id + " on the destination: " + e.what());
  }
}

}  // namespace crx::migrate
