// The migration protocol end to end over loopback TCP, with CRIU and the
// runtime replaced by fakes (real CRIU runs only in the qemu guests).
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <functional>
#include <future>
#include <mutex>
#include <thread>

#include "common/error.hpp"
#include "common/fs.hpp"
#include "migrate/freeze_hook.hpp"
#include "migrate/image_stream.hpp"
#include "migrate/precopy.hpp"
#include "migrate/receiver.hpp"
#include "migrate/sender.hpp"
#include "criu_stats_images.hpp"
#include "migrate_test_wire.hpp"

namespace {

using namespace crx::migrate;
using namespace std::chrono_literals;

std::string temp_dir() {
  char tmpl[] = "/tmp/crx-proto-XXXXXX";
  const char* d = ::mkdtemp(tmpl);
  EXPECT_NE(d, nullptr);
  return d;
}

// What a test's sender starts from: the test wire, the receiver at `to`
// (host:port), the shared key, container c1, its work dir under root and a
// 5 s time-out.
SenderOptions sender_options(const std::string& to, const SharedKey& key,
                             const std::string& root) {
  SenderOptions so;
  so.wire = crx::test::protocol_test_wire();
  so.to = parse_host_port(to);
  so.key = &key;
  so.manifest.id = "c1";
  so.work_dir = root + "/src";
  so.timeout = 5s;
  return so;
}

void write_all(int fd, size_t n) {
  std::string chunk(4096, 'p');
  while (n > 0) {
    size_t k = std::min(n, chunk.size());
    ssize_t w = ::write(fd, chunk.data(), k);
    ASSERT_GT(w, 0);
    n -= static_cast<size_t>(w);
  }
}

// What happened, in order, on both ends (post-copy cases).
struct Events {
  std::mutex m;
  std::vector<std::string> seen;
  void add(const std::string& e) {
    std::lock_guard l(m);
    seen.push_back(e);
  }
  // Index of the first e, -1 when absent.
  int at(const std::string& e) {
    std::lock_guard l(m);
    for (size_t i = 0; i < seen.size(); ++i)
      if (seen[i] == e) return static_cast<int>(i);
    return -1;
  }
};

// The source's half of a lazy dump: the images are written at once; a
// thread then pushes `bytes` of "memory" and serves until the destination
// closes the channel (CRIU's lazy page server ends when its peer is done).
struct FakeLazyDump : LazyDump {
  crx::UniqueFd fd;
  std::thread t;
  Events& ev;
  FakeLazyDump(crx::UniqueFd f, size_t bytes, Events& e) : fd(std::move(f)), ev(e) {
    t = std::thread([this, bytes] {
      // Pushes until the destination has it all or lets go of the channel
      // (a failed restore or lazy phase closes it, maybe mid-push: CRIU's
      // page server then ends too, so a write error is no test failure).
      std::string chunk(4096, 'p');
      for (size_t left = bytes; left > 0;) {
        ssize_t w = ::write(fd.get(), chunk.data(), std::min(left, chunk.size()));
        if (w <= 0) break;
        left -= static_cast<size_t>(w);
      }
      char c;
      while (::read(fd.get(), &c, 1) > 0) {
      }
      ev.add("source pages served");
    });
  }
  void wait_images(std::chrono::milliseconds) override {}
  void wait_pages(std::chrono::milliseconds) override {
    if (t.joinable()) t.join();
  }
  ~FakeLazyDump() override {
    ::shutdown(fd.get(), SHUT_RDWR);
    if (t.joinable()) t.join();
    ev.add("lazy dump gone");
  }
};

// The source container: memory shrinks from round to round.
struct FakeSource : SourceSide {
  Events* events = nullptr;
  size_t lazy_bytes = 1 << 20;
  int lazy_dumps = 0;
  std::vector<size_t> round_bytes{8 << 20, 1 << 20, 256 << 10, 64 << 10};
  int rounds = 0, freezes = 0, resumes = 0, destroys = 0, dumps = 0;
  bool fail_dump = false;
  // freeze() refuses once frozen, as CriuSource does when it finds a
  // process outside the init's tree (checkpoint/outside_processes.hpp).
  bool refuse_when_frozen = false;
  std::atomic<bool>* cancel_during_dump = nullptr;
  std::atomic<bool>* cancel_during_pre_dump = nullptr;
  // Ctrl-C halfway through round 1's pages, which then come slowly (a
  // slow link: a piece every 20 ms, 10 s in all) for as long as the page
  // channel takes them; one it refuses fails the pre-dump, as CRIU's does.
  std::atomic<bool>* cancel_mid_pre_dump = nullptr;
  bool pre_dump_cut = false;
  // A slow link: each round's pages go in 16 pieces, one per page_pace;
  // page_stall: after the first half, nothing for that long.
  std::chrono::milliseconds page_pace{0}, page_stall{0};

  void write_round(const std::string& dir, const std::string& parent, int fd) {
    size_t n = round_bytes[std::min<size_t>(rounds, round_bytes.size() - 1)];
    ++rounds;
    crx::write_file(dir + "/core-1.img", "core of round " + std::to_string(rounds));
    crx::write_file(dir + "/inventory.img", "");  // empty images must arrive too
    if (!parent.empty()) {
      ASSERT_EQ(::symlink(parent.c_str(), (dir + "/parent").c_str()), 0);
    }
    if (page_pace.count() == 0 && page_stall.count() == 0) return write_all(fd, n);
    for (int i = 0; i < 16; ++i) {
      if (i == 8) std::this_thread::sleep_for(page_stall);
      write_all(fd, n / 16);
      std::this_thread::sleep_for(page_pace);
    }
  }
  void pre_dump(const std::string& dir, const std::string& parent, int fd) override {
    if (events) events->add("source pre-dump");
    if (cancel_mid_pre_dump) {
      write_all(fd, 64 << 10);
      cancel_mid_pre_dump->store(true);
      std::string piece(4096, 'p');
      for (int i = 0; i < 500; ++i) {
        if (::send(fd, piece.data(), piece.size(), MSG_NOSIGNAL) < 0) {
          pre_dump_cut = true;
          throw crx::Error("criu pre-dump failed: the page channel is closed");
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
      }
      return;
    }
    write_round(dir, parent, fd);
    if (cancel_during_pre_dump) cancel_during_pre_dump->store(true);
  }
  // The dump prepared before the freeze: its dir and page channel, which
  // dump() must then get.
  std::vector<std::string> prepared_dumps;
  std::string prepared_parent;
  int prepared_fd = -1;
  void prepare_dump(const std::string& dir, const std::string& parent, int fd) override {
    prepared_dumps.push_back(dir);
    prepared_parent = parent;
    prepared_fd = fd;
    if (events) events->add("source dump prepared");
  }
  void freeze() override {
    ++freezes;
    if (events) events->add("source frozen");
    if (refuse_when_frozen)
      throw crx::Error("container c1 has 1 process outside its init's process tree");
  }
  bool verbs_at_final_dump = false;  // verbs objects made after the manifest
  std::string dump_dir;  // the final dump's, its parent and its page channel
  std::string dump_parent;
  int dump_fd = -1;
  void dump(const std::string& dir, const std::string& parent, int fd, ParentPages) override {
    ++dumps;
    dump_dir = dir;
    dump_parent = parent;
    dump_fd = fd;
    if (fail_dump) throw crx::Error("criu dump failed: Error (criu/cr-dump.c:1): boom");
    write_round(dir, parent, fd);
    if (verbs_at_final_dump)  // the verbs plugin's note: a context was dumped
      crx::write_file(dir + "/crx-verbs-dump.json", R"({"contexts":1,"objects":{"pd":1}})");
    if (cancel_during_dump) cancel_during_dump->store(true);
  }
  void resume() override {
    ++resumes;
    if (events) events->add("source resumed");
  }
  void destroy() override {
    ++destroys;
    if (events) events->add("source destroyed");
  }
  std::unique_ptr<LazyDump> lazy_dump(const std::string& dir, crx::UniqueFd fd) override {
    ++dumps;
    ++lazy_dumps;
    crx::write_file(dir + "/core-1.img", "core of the lazy dump");
    crx::write_file(dir + "/inventory.img", "");
    return std::make_unique<FakeLazyDump>(std::move(fd), lazy_bytes, *events);
  }
  // What the receiver's Acceptance said of frames; whether this side writes
  // them (a page filter: CriuSource's answer).
  std::optional<bool> destination_decodes;
  bool has_page_filter = true;
  bool zero_runs(bool decodes) override {
    destination_decodes = decodes;
    return decodes && has_page_filter;
  }
  // What the sender asked of compression (Acceptance::lz4_frames, the
  // channel encrypted, frames written).
  std::optional<bool> compress_asked;
  bool compress_pages(bool decodes) override {
    compress_asked = decodes;
    return decodes;
  }
  // What the receiver's Acceptance said of UTS and IPC namespaces.
  std::optional<bool> destination_makes_uts_ipc_;
  void destination_makes_uts_ipc(bool yes) override { destination_makes_uts_ipc_ = yes; }
  // What the receiver's Acceptance said of a LateState; what the late
  // read finds, or that it fails.
  std::optional<bool> destination_takes_late_state_;
  void destination_takes_late_state(bool yes) override { destination_takes_late_state_ = yes; }
  std::optional<bool> destination_has_elf_files_;
  void destination_has_elf_files(bool same) override { destination_has_elf_files_ = same; }
  std::optional<std::string> destination_cgroup_;
  void destination_cgroup(const std::string& path) override { destination_cgroup_ = path; }
  std::map<std::string, std::string> late_sysctls;
  bool fail_late = false;
  int late_reads = 0;
  LateState late_state() override {
    ++late_reads;
    if (events) events->add("source read its late state");
    if (fail_late) throw crx::Error("the container's network namespace: Operation not permitted");
    return LateState{late_sysctls};
  }
  // As CriuSource would say: from the second round on, 512 pages were at
  // the destination already (the page filter); CRIU kept the container
  // frozen 0.25 s per round (its stats-dump).
  RoundStats last_round() const override {
    RoundStats s;
    s.dedup.pages_unchanged = rounds > 1 ? 512 : 0;
    s.dedup.zero_pages = 3;  // sent as their count (zero_runs.hpp)
    s.dedup.compressed_in = 40960;  // and the rest LZ4-compressed, to a tenth
    s.dedup.compressed_out = 4096;
    // A final dump that checked CRIU's parent pages (ParentPages::Check).
    if (dumps > 0) {
      s.dedup.parent_pages_checked = 1024;
      s.dedup.parent_pages_changed = 256;
      s.netns_moved_empty = true;  // its network namespace as a new one
      s.net_sysctls_carried = 2;   // and two sysctls crx carried
      s.netns_read_ahead = true;   // its configuration read before the freeze
      s.net_sysctls_late = true;   // its sysctls after the images were sent
      s.uts_ipc_made_anew = true;  // its UTS and IPC namespaces left out
      s.cgroup_left_to_destination = true;  // its cgroup not walked
    }
    s.criu.emplace();
    s.criu->frozen_seconds = 0.25;
    return s;
  }
};

// The destination's lazy-pages daemon: reads `want` bytes (all memory),
// then lets go of the channel; or, failing, stops after half and throws.
// Without a channel (filled after the resume), `want` bytes come from the
// images here.
struct FakeLazyPages : LazyPages {
  crx::UniqueFd fd;
  std::thread t;
  Events& ev;
  bool fail;
  std::atomic<uint64_t> got{0};
  FakeLazyPages(crx::UniqueFd f, size_t want, bool fail_half, Events& e)
      : fd(std::move(f)), ev(e), fail(fail_half) {
    if (!fd) {
      got = want;
      return;
    }
    t = std::thread([this, want] {
      size_t goal = fail ? want / 2 : want;
      char buf[65536];
      while (got < goal) {
        ssize_t n = ::read(fd.get(), buf, std::min(sizeof buf, goal - got));
        if (n <= 0) break;
        got += static_cast<uint64_t>(n);
      }
      if (!fail) ::shutdown(fd.get(), SHUT_RDWR);
    });
  }
  LazyStats wait(std::chrono::milliseconds) override {
    if (t.joinable()) t.join();
    if (fail && !fd) throw crx::Error("criu lazy-pages exited with status 1");
    if (fail) throw crx::Error("criu lazy-pages: the page channel broke");
    LazyStats s;
    s.bytes = got;
    s.pages = got / kLazyPageSize;
    s.on_demand_pages = 3;
    s.faults = 4;
    ev.add("destination has every page");
    return s;
  }
  ~FakeLazyPages() override {
    ::shutdown(fd.get(), SHUT_RDWR);
    if (t.joinable()) t.join();
    ev.add("lazy pages gone");
  }
};

// A page server that stores what arrives as pages-1.img.
struct FakePageSink : PageSink {
  std::thread t;
  std::atomic<uint64_t> got{0};
  explicit FakePageSink(std::string dir, crx::UniqueFd fd) {
    t = std::thread([this, dir, fd = std::move(fd)]() mutable {
      std::string all;
      char buf[65536];
      ssize_t n;
      while ((n = ::read(fd.get(), buf, sizeof buf)) > 0) {
        all.append(buf, n);
        got += static_cast<uint64_t>(n);
      }
      crx::write_file(dir + "/pages-1.img", all);
    });
  }
  void wait(std::chrono::milliseconds) override { t.join(); }
  uint64_t bytes_so_far() const override { return got.load(); }
  ~FakePageSink() override {
    if (t.joinable()) t.join();
  }
};

struct FakeDestination;

// What prepare_restore made: run() is the restore; destroyed before a run
// that succeeded, it counts as released (what CriuPreparedRestore removes).
struct FakePreparedRestore : PreparedRestore {
  FakeDestination& d;
  bool succeeded = false;
  explicit FakePreparedRestore(FakeDestination& dest);
  int run(const std::string& dir, const std::function<void()>& hold,
          const std::function<void()>& resumed) override;
  void restore_pages_lazily() override;
  void set_net_sysctls(const std::map<std::string, std::string>& sysctls) override;
  void save_state_ahead() override;
  std::string cgroup_path() const override;
  ~FakePreparedRestore() override;
};

struct FakeDestination : DestinationSide {
  std::mutex m;
  bool fail_restore = false;
  bool fail_prepare = false;
  int prepares = 0, released = 0;
  std::vector<bool> framed_rounds;  // start_page_server's zero_runs, round by round
  std::string session_dir, work_dir;  // what prepare_restore was given
  int restores = 0, discards = 0, resumes = 0;
  std::string restored_core, parent_link;
  bool empty_inventory = false;
  std::string verbs_note;  // written as the verbs plugin's restore note
  std::string criu_stats;  // written as CRIU's stats-restore in the work dir
  Events* events = nullptr;
  bool can_lazy = true;     // e.g. no userfaultfd here: false
  bool fail_lazy = false;   // the lazy phase (or the fill after the resume) breaks half-way
  size_t lazy_bytes = 1 << 20;
  bool can_fill = true;          // userfaultfd here
  bool fail_plan = false;        // the fill's plan cannot read the images
  int restores_without_pages = 0;  // restore_pages_lazily() before run()
  std::vector<std::string> fill_dirs;  // start_fill's round dirs
  std::vector<std::string> ready_dirs;  // prepare_fill's
  std::vector<bool> fill_aheads;        // whether start_fill got what prepare_fill readied
  std::map<std::string, std::string> net_sysctls_set;  // by set_net_sysctls
  bool fail_net_sysctls = false;                        // which then throws
  int states_saved_ahead = 0;                           // save_state_ahead() calls
  bool can_fill_after_resume() override { return can_fill; }
  // What prepare_fill() readies: dropped unused, it says so.
  struct FakeReadyFill : ReadyFill {
    Events* events = nullptr;
    bool used = false;
    ~FakeReadyFill() override {
      if (!used && events) events->add("readied fill dropped");
    }
  };
  std::unique_ptr<ReadyFill> prepare_fill(const std::string& dir, const std::string& work) override {
    EXPECT_EQ(work, work_dir);
    ready_dirs.push_back(dir);
    if (events) events->add("fill readied");
    auto r = std::make_unique<FakeReadyFill>();
    r->events = events;
    return r;
  }
  // The fill's plan left lazy_bytes to the daemon, or nothing below min.
  std::unique_ptr<LazyPages> start_fill(const std::string& dir, const std::string& work,
                                        uint64_t min_bytes, std::unique_ptr<ReadyFill> ahead) override {
    EXPECT_EQ(work, work_dir);  // the daemon listens where the restore looks
    fill_dirs.push_back(dir);
    fill_aheads.push_back(ahead != nullptr);
    if (fail_plan) throw crx::Error("CRIU's image pagemap-1.img: a truncated entry", crx::Cause::Invalid);
    if (lazy_bytes < min_bytes) return nullptr;
    if (ahead) static_cast<FakeReadyFill&>(*ahead).used = true;
    return std::make_unique<FakeLazyPages>(crx::UniqueFd(), lazy_bytes, fail_lazy, *events);
  }

  Acceptance accept(const Manifest& man) override {
    if (man.id == "exists-here") throw crx::Error("container exists-here already exists");
    elf_files_heard = man.elf_files;
    Acceptance a{man.bundle, false, man.lazy && can_lazy};
    a.elf_files_same = elf_files_same;
    return a;
  }
  bool elf_files_same = false;  // what accept() answers
  std::string cgroup_path;      // what the prepared restore made
  std::optional<std::vector<ElfFile>> elf_files_heard;
  std::unique_ptr<LazyPages> start_lazy_pages(const std::string&, const std::string& work,
                                              crx::UniqueFd ch) override {
    EXPECT_EQ(work, work_dir);  // the daemon listens where the restore looks
    return std::make_unique<FakeLazyPages>(std::move(ch), lazy_bytes, fail_lazy, *events);
  }
  std::unique_ptr<PreparedRestore> prepare_restore(const Manifest&, const Acceptance&,
                                                   const std::string& session,
                                                   const std::string& work) override {
    if (fail_prepare)
      throw crx::Error("cannot create cgroup /sys/fs/cgroup/c1: No space left on device",
                       crx::Cause::IO);
    std::this_thread::sleep_for(20ms);  // long enough to show in the report
    ++prepares;
    session_dir = session;
    work_dir = work;
    if (events) events->add("restore prepared");
    return std::make_unique<FakePreparedRestore>(*this);
  }
  std::unique_ptr<PageSink> start_page_server(const std::string& dir, crx::UniqueFd ch,
                                              bool zero_runs) override {
    if (events) events->add("page server for round " + dir.substr(dir.rfind('/') + 1));
    framed_rounds.push_back(zero_runs);
    return std::make_unique<FakePageSink>(dir, std::move(ch));
  }
  int restore(PreparedRestore& prepared, const std::string& dir, const Manifest&,
              const std::function<void()>& hold, const std::function<void()>& resumed) override {
    return prepared.run(dir, hold, resumed);
  }
  bool tells_resumed = true;  // as CRIU's post-resume; false: restore() returns untold
  // After the resume was told: the restore's own end (CRIU's exit, clean-up).
  std::function<void()> after_resume;
  int run_restore(const std::string& dir, const std::function<void()>& hold,
                  const std::function<void()>& resumed) {
    std::lock_guard l(m);
    // The final round's images are below the dir the restore was prepared for.
    EXPECT_EQ(dir.rfind(session_dir + "/", 0), 0u) << dir;
    ++restores;
    if (fail_restore) throw crx::Error("criu restore failed: Error (criu/cr-restore.c:1): no");
    restored_core = crx::read_file(dir + "/core-1.img");
    struct stat st{};
    empty_inventory = ::stat((dir + "/inventory.img").c_str(), &st) == 0 && st.st_size == 0;
    char buf[64] = {};
    if (::readlink((dir + "/parent").c_str(), buf, sizeof buf - 1) > 0) parent_link = buf;
    if (!verbs_note.empty()) crx::write_file(dir + "/crx-verbs-restore.json", verbs_note);
    if (!criu_stats.empty()) {
      crx::mkdir_p(work_dir, 0700);  // CriuPreparedRestore makes it
      crx::write_file(work_dir + "/stats-restore", criu_stats);
    }
    hold();  // throws when the sender does not commit: then nothing resumes
    ++resumes;
    if (events) events->add("destination resumed");
    if (tells_resumed && resumed) {
      resumed();
      if (after_resume) after_resume();
      if (events) events->add("destination restore ended");
    }
    return 4242;
  }
  void discard(const Manifest&) noexcept override {
    ++discards;
    if (events) events->add("destination copy killed");
  }
};

FakePreparedRestore::FakePreparedRestore(FakeDestination& dest) : d(dest) {}

int FakePreparedRestore::run(const std::string& dir, const std::function<void()>& hold,
                             const std::function<void()>& resumed) {
  int pid = d.run_restore(dir, hold, resumed);
  succeeded = true;
  return pid;
}

void FakePreparedRestore::set_net_sysctls(const std::map<std::string, std::string>& sysctls) {
  if (d.events) d.events->add("destination set the late sysctls");
  if (d.fail_net_sysctls)
    throw crx::Error("setting network sysctl net/core/somaxconn: Invalid argument",
                     crx::Cause::Invalid);
  for (const auto& [path, value] : sysctls) d.net_sysctls_set[path] = value;
}

void FakePreparedRestore::save_state_ahead() {
  ++d.states_saved_ahead;
  if (d.events) d.events->add("destination saved its state ahead");
}

std::string FakePreparedRestore::cgroup_path() const { return d.cgroup_path; }

void FakePreparedRestore::restore_pages_lazily() {
  ++d.restores_without_pages;
  if (d.events) d.events->add("restore leaves the pages to the daemon");
}

FakePreparedRestore::~FakePreparedRestore() {
  if (succeeded) return;
  ++d.released;
  if (d.events) d.events->add("prepared restore released");
}

struct Outcome {
  MigrationReport sender, receiver;
};

struct Harness {
  std::string root = temp_dir();
  SharedKey key = SharedKey::from_bytes("0123456789abcdef-test-key");
  SharedKey sender_key = key;
  FakeSource src;
  FakeDestination dst;
  int pre_copy = 0;
  bool pre_copy_auto = false;
  std::string id = "c1";
  std::string on_freeze;  // crx migrate --on-freeze
  std::atomic<bool> cancel{false};
  bool lazy = false;      // crx migrate --lazy
  bool prepare_restore = true;  // migration.prepare_restore
  FillAfterResume fill = FillAfterResume::Auto;  // migration.fill_after_resume
  std::optional<crx::rdma::RdmaInventory> rdma;  // the container's verbs objects
  std::optional<std::vector<ElfFile>> elf_files;  // the manifest's
  std::chrono::milliseconds receiver_timeout = 10s;
  Events events;

  Harness() {
    src.events = &events;
    dst.events = &events;
  }

  ~Harness() { crx::remove_tree(root); }

  // The receiver alone on a listener of its own, for a test that plays the
  // sender's part itself; report() waits for its report.
  struct LoneReceiver {
    TcpListener listener{parse_host_port("127.0.0.1:0")};
    ReceiverOptions ro;
    std::future<MigrationReport> done;
    std::string address() const { return "127.0.0.1:" + std::to_string(listener.port()); }
    MigrationReport report() { return done.get(); }
  };
  std::unique_ptr<LoneReceiver> lone_receiver(std::chrono::seconds timeout) {
    auto r = std::make_unique<LoneReceiver>();
    r->ro.wire = crx::test::protocol_test_wire();
    r->ro.key = &key;
    r->ro.image_root = root + "/dst";
    r->ro.timeout = timeout;
    r->done = std::async(std::launch::async, [this, lr = r.get()] {
      std::string peer;
      auto fd = lr->listener.accept(10s, &peer);
      return receive_one(lr->listener, std::move(fd), peer, dst, lr->ro);
    });
    return r;
  }

  // Both ends' wire security (run()).
  WireSecurity wire = crx::test::protocol_test_wire();
  Outcome run() {
    TcpListener listener(parse_host_port("127.0.0.1:0"));
    ReceiverOptions ro;
    ro.wire = wire;
    ro.key = &key;
    ro.image_root = root + "/dst";
    ro.timeout = receiver_timeout;
    ro.commit_timeout = 10s;
    ro.prepare_restore = prepare_restore;
    ro.fill_after_resume = fill;
    auto receiver = std::async(std::launch::async, [&] {
      std::string peer;
      auto fd = listener.accept(10s, &peer);
      return receive_one(listener, std::move(fd), peer, dst, ro);
    });
    SenderOptions so;
    so.wire = wire;
    so.to = parse_host_port("127.0.0.1:" + std::to_string(listener.port()));
    so.key = &sender_key;
    so.manifest.id = id;
    so.manifest.bundle = "/bundles/" + id;
    so.manifest.config_sha256 = "00";
    so.manifest.lazy = lazy;
    so.manifest.rdma = rdma;
    so.manifest.elf_files = elf_files;
    so.work_dir = root + "/src";
    so.pre_copy = PreCopyPolicy{pre_copy, 20};
    so.pre_copy.adaptive = pre_copy_auto;
    so.timeout = 10s;
    so.restore_timeout = 10s;
    so.cancel = &cancel;
    Outcome r;
    if (on_freeze.empty()) {
      r.sender = migrate_out(src, so);
    } else {
      FreezeHookSource hooked(src, on_freeze, id, 10s);
      r.sender = migrate_out(hooked, so);
    }
    r.receiver = receiver.get();
    return r;
  }
};

TEST(MigrateProtocol, PreCopyRoundsThenFinalDumpThenCommit) {
  Harness h;
  h.pre_copy = 3;
  Outcome r = h.run();
  ASSERT_EQ(r.sender.outcome, "migrated") << r.sender.error;
  EXPECT_EQ(r.receiver.outcome, "migrated") << r.receiver.error;
  // 3 pre-copy rounds (8 MiB, 1 MiB, 256 KiB) + the final dump (64 KiB).
  ASSERT_EQ(r.sender.rounds.size(), 4u);
  EXPECT_EQ(r.sender.rounds[0].page_bytes, 8u << 20);
  EXPECT_EQ(r.sender.rounds[3].page_bytes, 64u << 10);
  EXPECT_TRUE(r.sender.rounds[3].final);
  EXPECT_LT(r.sender.rounds[3].page_bytes, r.sender.rounds[0].page_bytes);
  EXPECT_EQ(r.sender.pre_copy_stop, "max rounds (3) reached");
  // What the source's page filter left out is in each round's report.
  EXPECT_EQ(r.sender.rounds[0].unchanged_pages, 0u);
  EXPECT_EQ(r.sender.rounds[3].unchanged_pages, 512u);
  EXPECT_NE(r.sender.to_text().find("2.0 MiB unchanged, not sent again"), std::string::npos)
      << r.sender.to_text();
  EXPECT_NE(r.sender.to_json().find("\"unchanged_page_bytes\":2097152"), std::string::npos);
  // And the final dump's check of CRIU's parent pages (pre-dumps have none).
  EXPECT_EQ(r.sender.rounds[0].parent_pages_checked, 0u);
  EXPECT_EQ(r.sender.rounds[3].parent_pages_checked, 1024u);
  EXPECT_EQ(r.sender.rounds[3].parent_pages_changed, 256u);
  EXPECT_NE(r.sender.to_text().find("4.0 MiB CRIU took from the parent checked, 1.0 MiB of it changed"),
            std::string::npos)
      << r.sender.to_text();
  EXPECT_NE(r.sender.to_json().find("\"parent_checked_bytes\":4194304"), std::string::npos);
  EXPECT_NE(r.sender.to_json().find("\"parent_changed_bytes\":1048576"), std::string::npos);
  // A network namespace moved as a new one, said for the final dump only.
  EXPECT_FALSE(r.sender.rounds[0].netns_moved_empty);
  EXPECT_TRUE(r.sender.rounds[3].netns_moved_empty);
  EXPECT_NE(r.sender.to_text().find("network namespace as a new one, moved empty"), std::string::npos)
      << r.sender.to_text();
  EXPECT_NE(r.sender.to_json().find("\"network_namespace_moved_empty\":true"), std::string::npos);
  EXPECT_NE(r.sender.to_text().find("2 network sysctls carried by crx"), std::string::npos)
      << r.sender.to_text();
  EXPECT_NE(r.sender.to_json().find("\"network_sysctls_carried\":2"), std::string::npos);
  EXPECT_FALSE(r.sender.rounds[0].netns_read_ahead);
  EXPECT_TRUE(r.sender.rounds[3].netns_read_ahead);
  EXPECT_NE(r.sender.to_text().find("network namespace read before the freeze"), std::string::npos)
      << r.sender.to_text();
  EXPECT_NE(r.sender.to_json().find("\"network_namespace_read_before_freeze\":true"),
            std::string::npos);
  EXPECT_FALSE(r.sender.rounds[0].uts_ipc_made_anew);
  EXPECT_TRUE(r.sender.rounds[3].uts_ipc_made_anew);
  EXPECT_NE(r.sender.to_text().find("UTS and IPC namespaces made anew, their content carried by crx"),
            std::string::npos)
      << r.sender.to_text();
  EXPECT_NE(r.sender.to_json().find("\"uts_ipc_namespaces_made_anew\":true"), std::string::npos);
  EXPECT_FALSE(r.sender.rounds[0].cgroup_left_to_destination);
  EXPECT_TRUE(r.sender.rounds[3].cgroup_left_to_destination);
  EXPECT_NE(r.sender.to_text().find("cgroup left to the destination's, not walked"),
            std::string::npos)
      << r.sender.to_text();
  EXPECT_NE(r.sender.to_json().find("\"cgroup_left_to_destination\":true"), std::string::npos);
  // And CRIU's own account of each round.
  ASSERT_TRUE(r.sender.rounds[3].criu);
  EXPECT_DOUBLE_EQ(r.sender.rounds[3].criu->frozen_seconds, 0.25);
  EXPECT_NE(r.sender.to_text().find("CRIU: frozen 0.250 s"), std::string::npos) << r.sender.to_text();
  // The final round's images arrived intact, with CRIU's parent link.
  EXPECT_EQ(h.dst.restored_core, "core of round 4");
  EXPECT_TRUE(h.dst.empty_inventory);
  EXPECT_EQ(h.dst.parent_link, "../3");
  // Exactly one copy: the source destroyed after the commit, never resumed.
  EXPECT_EQ(h.src.freezes, 1);
  EXPECT_EQ(h.src.destroys, 1);
  EXPECT_EQ(h.src.resumes, 0);
  EXPECT_EQ(h.dst.resumes, 1);
  EXPECT_EQ(h.dst.discards, 0);
  // Nothing left in the RAM dirs on either side.
  EXPECT_FALSE(crx::path_exists(h.root + "/src"));
  EXPECT_FALSE(crx::path_exists(h.root + "/dst/c1-" ));
  EXPECT_NE(r.sender.to_json().find("\"outcome\":\"migrated\""), std::string::npos);
}

// The destination's restore tells when the container runs (CRIU's
// post-resume); its exit and clean-up come after the sender's downtime.
TEST(MigrateProtocol, TheSenderHearsTheContainerRunsBeforeTheRestoreEnds) {
  Harness h;
  // The restore's end waits for the source to go: only an acknowledgement
  // sent at the resume lets it go first.
  h.dst.after_resume = [&h] {
    for (int i = 0; i < 500 && h.events.at("source destroyed") < 0; ++i)
      std::this_thread::sleep_for(10ms);
  };
  Outcome r = h.run();
  ASSERT_EQ(r.sender.outcome, "migrated") << r.sender.error;
  ASSERT_EQ(r.receiver.outcome, "migrated") << r.receiver.error;
  EXPECT_LT(h.events.at("destination resumed"), h.events.at("source destroyed"));
  EXPECT_LT(h.events.at("source destroyed"), h.events.at("destination restore ended"));
  EXPECT_EQ(h.dst.discards, 0);
}

// What fails after the container ran here (CRIU's exit, a clean-up) does
// not undo a migration the sender was told of; nor does a destination
// that cannot tell the moment (it returns from the restore untold) keep
// the sender from hearing.
TEST(MigrateProtocol, AFailureAfterTheResumeLeavesTheContainerMigrated) {
  for (bool tells : {true, false}) {
    Harness h;
    h.dst.tells_resumed = tells;
    h.dst.after_resume = [] {
      throw crx::Error("criu restore: the answer after post-resume was lost");
    };
    Outcome r = h.run();
    EXPECT_EQ(r.sender.outcome, "migrated") << tells << ": " << r.sender.error;
    EXPECT_EQ(r.receiver.outcome, "migrated") << tells << ": " << r.receiver.error;
    EXPECT_EQ(h.src.destroys, 1) << tells;
    EXPECT_EQ(h.src.resumes, 0) << tells;
    EXPECT_EQ(h.dst.discards, 0) << tells;
  }
}

// A migration that failed after the freeze and before the commit: the
// sender says why, the source runs on, the destination never ran a copy.
void expect_rolled_back(const Outcome& r, const Harness& h, const std::string& why) {
  EXPECT_EQ(r.sender.outcome, "rolled back");
  EXPECT_NE(r.sender.error.find(why), std::string::npos) << r.sender.error;
  EXPECT_EQ(r.receiver.outcome, "rolled back");
  EXPECT_EQ(h.src.freezes, 1);
  EXPECT_EQ(h.src.resumes, 1);
  EXPECT_EQ(h.src.destroys, 0);
  EXPECT_EQ(h.dst.resumes, 0);
}

// The manifest's ELF files reach the destination, and its answer reaches
// the source before the first round: only a destination that found them
// the same lets the final dump leave CRIU's build-ids out.
TEST(MigrateProtocol, TheDestinationsWordOnTheElfFilesReachesTheSource) {
  for (bool same : {false, true}) {
    Harness h;
    h.dst.elf_files_same = same;
    h.elf_files = std::vector<ElfFile>{{"/usr/lib/libx.so.1", 4096, "ab12"}};
    Outcome r = h.run();
    ASSERT_EQ(r.sender.outcome, "migrated") << r.sender.error;
    ASSERT_TRUE(h.dst.elf_files_heard.has_value());
    ASSERT_EQ(h.dst.elf_files_heard->size(), 1u);
    EXPECT_EQ(h.dst.elf_files_heard->front().path, "/usr/lib/libx.so.1");
    EXPECT_EQ(h.dst.elf_files_heard->front().size, 4096u);
    EXPECT_EQ(h.dst.elf_files_heard->front().build_id, "ab12");
    EXPECT_EQ(h.src.destination_has_elf_files_, same);
  }
}

// The path of the cgroup the destination's prepared restore made reaches
// the source before the first round; a destination that did not prepare
// before its answer says none.
TEST(MigrateProtocol, TheDestinationsCgroupPathReachesTheSource) {
  {
    Harness h;
    h.dst.cgroup_path = "/crx/c1";
    Outcome r = h.run();
    ASSERT_EQ(r.sender.outcome, "migrated") << r.sender.error;
    EXPECT_EQ(h.src.destination_cgroup_, "/crx/c1");
  }
  Acceptance a{"/b", false};
  EXPECT_EQ(parse_acceptance(to_json(a)).cgroup_path, "");  // an older receiver's
  a.cgroup_path = "/crx/c1";
  EXPECT_EQ(parse_acceptance(to_json(a)).cgroup_path, "/crx/c1");
  EXPECT_THROW(parse_acceptance(R"({"bundle":"/b","need_rootfs":false,"cgroup_path":"c1"})"),
               crx::Error);
}

// The network sysctls the final dump left to read: read by the source
// while the destination restores, set there before the tasks run (before
// the RestoreOk, so that a failure still rolls back).
TEST(MigrateProtocol, WhatTheSourceReadsAfterTheImagesIsSetBeforeTheTasksRun) {
  Harness h;
  h.src.late_sysctls = {{"net/core/somaxconn", "512"}, {"net/ipv4/tcp_keepalive_time", "1234"}};
  Outcome r = h.run();
  ASSERT_EQ(r.sender.outcome, "migrated") << r.sender.error;
  EXPECT_EQ(h.src.destination_takes_late_state_, true);
  EXPECT_EQ(h.src.late_reads, 1);
  EXPECT_EQ(h.dst.net_sysctls_set, h.src.late_sysctls);
  EXPECT_LT(h.events.at("source read its late state"), h.events.at("destination set the late sysctls"));
  EXPECT_LT(h.events.at("destination set the late sysctls"), h.events.at("destination resumed"));
  // Counted with the two the final dump carried in its images.
  EXPECT_EQ(r.sender.rounds.back().net_sysctls_carried, 4u);
  EXPECT_TRUE(r.sender.rounds.back().net_sysctls_late);
  EXPECT_NE(r.sender.to_text().find("its sysctls read after the images were sent"),
            std::string::npos)
      << r.sender.to_text();
  EXPECT_NE(r.sender.to_json().find("\"network_sysctls_read_after_images\":true"),
            std::string::npos);
}

TEST(MigrateProtocol, ALateReadThatFailsRollsBack) {
  Harness h;
  h.src.fail_late = true;
  Outcome r = h.run();
  expect_rolled_back(r, h, "Operation not permitted");
  EXPECT_TRUE(h.dst.net_sysctls_set.empty());
}

TEST(MigrateProtocol, LateSysctlsTheDestinationCannotSetRollBack) {
  Harness h;
  h.src.late_sysctls = {{"net/core/somaxconn", "512"}};
  h.dst.fail_net_sysctls = true;
  Outcome r = h.run();
  expect_rolled_back(r, h, "net/core/somaxconn");
  EXPECT_EQ(h.dst.released, 1);
}

TEST(MigrateProtocol, LateStateParsing) {
  LateState s;
  s.net_sysctls = {{"net/core/somaxconn", "512"}, {"net/ipv4/conf/all/forwarding", "1"}};
  EXPECT_EQ(parse_late_state(to_json(s)).net_sysctls, s.net_sysctls);
  EXPECT_TRUE(parse_late_state("{}").net_sysctls.empty());
  for (const char* bad : {R"({"net_sysctls": []})", R"({"net_sysctls": {"kernel/hostname": "x"}})",
                          R"({"net_sysctls": {"net/../kernel/core_pattern": "x"}})",
                          R"({"net_sysctls": {"net/core/": "1"}})",
                          R"({"net_sysctls": {"net/core/somaxconn": 512}})"}) {
    try {
      parse_late_state(bad);
      ADD_FAILURE() << bad << " was taken";
    } catch (const crx::Error& e) {
      EXPECT_EQ(e.cause(), crx::Cause::Invalid) << bad << ": " << e.what();
    }
  }
  EXPECT_THROW(parse_late_state("[]"), crx::Error);
  EXPECT_THROW(parse_late_state("{"), crx::Error);
  Acceptance a{"/b", false};
  EXPECT_FALSE(parse_acceptance(to_json(a)).late_state);  // an older receiver's
  a.late_state = true;
  EXPECT_TRUE(parse_acceptance(to_json(a)).late_state);
}

TEST(MigrateProtocol, ARoundLongerThanTheTimeOutGoesOnWhileItsPagesFlow) {
  // The control link is silent while a round's pages flow: the receiver's
  // 1 s step time-out must not end a ~3 s round whose page channel moves.
  Harness h;
  h.pre_copy = 1;
  h.receiver_timeout = 1s;
  h.src.page_pace = 200ms;
  Outcome r = h.run();
  ASSERT_EQ(r.sender.outcome, "migrated") << r.sender.error;
  EXPECT_EQ(r.receiver.outcome, "migrated") << r.receiver.error;
  ASSERT_EQ(r.receiver.rounds.size(), 2u);
  EXPECT_GT(r.receiver.rounds[0].seconds, 2.0) << "the round outlasted the time-out";
  EXPECT_EQ(r.receiver.rounds[0].page_bytes, 8u << 20);
}

TEST(MigrateProtocol, ARoundWhosePagesStopStillTimesOutAndTheSourceRunsOn) {
  Harness h;
  h.pre_copy = 1;
  h.receiver_timeout = 1s;
  h.src.page_stall = 4s;  // half the pages, then silence on both links
  Outcome r = h.run();
  EXPECT_EQ(r.receiver.outcome, "rolled back");
  EXPECT_NE(r.receiver.error.find("timed out after 1 s"), std::string::npos) << r.receiver.error;
  EXPECT_NE(r.sender.outcome, "migrated");
  EXPECT_EQ(h.src.freezes, 0);
  EXPECT_EQ(h.src.destroys, 0);
  EXPECT_EQ(h.dst.restores, 0);
}

TEST(MigrateProtocol, AutoPreCopyMeasuresEveryRoundAndSaysWhyItStopped) {
  // How many rounds depends on the loopback's timing; what each round
  // reports and that auto stops with a reason does not.
  Harness h;
  h.pre_copy_auto = true;
  Outcome r = h.run();
  ASSERT_EQ(r.sender.outcome, "migrated") << r.sender.error;
  ASSERT_GE(r.sender.rounds.size(), 2u);
  ASSERT_LE(r.sender.rounds.size(), static_cast<size_t>(kAutoMaxRounds) + 1);
  EXPECT_EQ(r.sender.rounds[0].page_bytes, 8u << 20);
  for (const auto& round : r.sender.rounds) {
    EXPECT_GT(round.throughput, 0) << round.round;
    if (!round.final) {
      EXPECT_GT(round.bandwidth, 0) << round.round;
    }
    if (round.round >= 2) {
      EXPECT_GT(round.dirty_rate, 0) << round.round;
    }
    if (!round.final && round.round >= 2) {
      EXPECT_TRUE(round.predicted_downtime) << round.round;
    }
  }
  EXPECT_TRUE(r.sender.rounds.back().final);
  EXPECT_FALSE(r.sender.pre_copy_stop.empty());
  EXPECT_EQ(r.sender.pre_copy_mode, "auto");
  EXPECT_NE(r.sender.to_text().find("pre-copy stopped (auto): "), std::string::npos);
  EXPECT_EQ(h.src.destroys, 1);
}

TEST(MigrateProtocol, RestoreFailureResumesTheSource) {
  Harness h;
  h.dst.fail_restore = true;
  Outcome r = h.run();
  expect_rolled_back(r, h, "criu restore failed");
  EXPECT_EQ(h.dst.discards, 1);
}

// A failure at the freeze (after one pre-copy round): both ends roll back,
// the source is thawed, nothing was dumped or restored; the sender's error
// contains `why`.
// Nothing of a migration left in a receiver's image root.
bool empty_or_absent(const std::string& dir) {
  std::error_code ec;
  return !std::filesystem::exists(dir, ec) || std::filesystem::is_empty(dir, ec);
}

void expect_thawed_before_any_dump(Harness& h, const std::string& why) {
  h.pre_copy = 1;
  Outcome r = h.run();
  EXPECT_EQ(r.sender.outcome, "rolled back");
  EXPECT_NE(r.sender.error.find(why), std::string::npos) << r.sender.error;
  EXPECT_EQ(r.receiver.outcome, "rolled back");
  EXPECT_EQ(h.src.freezes, 1);
  EXPECT_EQ(h.src.dumps, 0);
  EXPECT_EQ(h.src.resumes, 1);
  EXPECT_EQ(h.src.destroys, 0);
  EXPECT_EQ(h.dst.restores, 0);
  // The final round was open (its page server started) before the freeze
  // failed: nothing of it stays on the destination.
  EXPECT_GE(h.events.at("page server for round 2"), 0);
  EXPECT_TRUE(empty_or_absent(h.root + "/dst")) << "the receiver's session dir";
}

TEST(MigrateProtocol, RefusalOnceFrozenThawsTheSourceBeforeAnyDump) {
  Harness h;
  h.src.refuse_when_frozen = true;
  expect_thawed_before_any_dump(h, "outside its init's process tree");
}

TEST(MigrateProtocol, AFailedFreezeHookThawsTheSourceBeforeAnyDump) {
  Harness h;
  h.on_freeze = "exit 1";
  expect_thawed_before_any_dump(h, "--on-freeze");
}

TEST(MigrateProtocol, WrongKeyNeverFreezesTheSource) {
  Harness h;
  h.sender_key = SharedKey::from_bytes("another-key-0123456789");
  Outcome r = h.run();
  EXPECT_EQ(r.sender.outcome, "rolled back");
  EXPECT_NE(r.sender.error.find("authentication failed"), std::string::npos) << r.sender.error;
  EXPECT_NE(r.receiver.error.find("authentication failed"), std::string::npos) << r.receiver.error;
  EXPECT_EQ(h.src.freezes, 0);
  EXPECT_EQ(h.src.dumps, 0);
  EXPECT_EQ(h.dst.restores, 0);
}

TEST(MigrateProtocol, DumpFailureResumesTheSourceAndCleansTheDestination) {
  Harness h;
  h.src.fail_dump = true;
  Outcome r = h.run();
  EXPECT_EQ(r.sender.outcome, "rolled back");
  EXPECT_NE(r.sender.error.find("criu dump failed"), std::string::npos);
  EXPECT_NE(r.receiver.error.find("criu dump failed"), std::string::npos) << r.receiver.error;
  EXPECT_EQ(h.src.resumes, 1);
  EXPECT_EQ(h.dst.restores, 0);
}

TEST(MigrateProtocol, InterruptBeforeCommitUndoesTheHeldRestore) {
  Harness h;
  h.src.cancel_during_dump = &h.cancel;
  Outcome r = h.run();
  EXPECT_EQ(r.sender.outcome, "rolled back");
  EXPECT_EQ(r.sender.error, "interrupted");
  EXPECT_EQ(r.receiver.outcome, "rolled back");
  EXPECT_EQ(h.src.resumes, 1);
  EXPECT_EQ(h.src.destroys, 0);
  // Restored but held before resume: it never ran and was discarded, the
  // state it had saved ahead with it.
  EXPECT_EQ(h.dst.restores, 1);
  EXPECT_EQ(h.dst.states_saved_ahead, 1);
  EXPECT_EQ(h.dst.resumes, 0);
  EXPECT_EQ(h.dst.discards, 1);
  EXPECT_EQ(h.dst.released, 1);
}

// The destination writes the container's state while its RestoreOk and the
// Commit travel, once, after the late sysctls and before the resume.
TEST(MigrateProtocol, TheStateIsSavedAheadWhileTheCommitTravels) {
  Harness h;
  h.src.late_sysctls = {{"net/core/somaxconn", "512"}};
  Outcome r = h.run();
  ASSERT_EQ(r.sender.outcome, "migrated") << r.sender.error;
  EXPECT_EQ(h.dst.states_saved_ahead, 1);
  EXPECT_LT(h.events.at("destination set the late sysctls"),
            h.events.at("destination saved its state ahead"));
  EXPECT_LT(h.events.at("destination saved its state ahead"), h.events.at("destination resumed"));
}

// The receiver's phases, by name.
std::vector<std::string> phase_names(const MigrationReport& r) {
  std::vector<std::string> names;
  for (const auto& p : r.phases) names.push_back(p.name);
  return names;
}

int phase_index(const MigrationReport& r, const std::string& name) {
  auto names = phase_names(r);
  for (size_t i = 0; i < names.size(); ++i)
    if (names[i] == name) return static_cast<int>(i);
  return -1;
}

TEST(MigratePreparedRestore, PreparedBeforeThePreCopyRoundsThenRestoredWithIt) {
  Harness h;
  h.pre_copy = 2;
  Outcome r = h.run();
  ASSERT_EQ(r.sender.outcome, "migrated") << r.sender.error;
  EXPECT_EQ(h.dst.prepares, 1);
  EXPECT_EQ(h.dst.restores, 1);
  EXPECT_EQ(h.dst.released, 0);
  // Prepared while the source ran: before its first pre-dump and freeze.
  ASSERT_GE(h.events.at("restore prepared"), 0);
  EXPECT_LT(h.events.at("restore prepared"), h.events.at("source pre-dump"));
  EXPECT_LT(h.events.at("restore prepared"), h.events.at("source frozen"));
  // The session's dir (the rounds are below it), CRIU's work dir in it.
  EXPECT_EQ(h.dst.work_dir, h.dst.session_dir + "/restore.work");
  // The receiver's phase table: prepare, then the rounds, then restore.
  int prepare = phase_index(r.receiver, "prepare");
  ASSERT_GE(prepare, 0);
  EXPECT_LT(prepare, phase_index(r.receiver, "pre-copy 1"));
  EXPECT_LT(prepare, phase_index(r.receiver, "restore"));
  EXPECT_GE(r.receiver.phases[prepare].seconds, 0.015);
  // Both reports say how long it took, out of the downtime.
  EXPECT_GE(r.receiver.prepare_seconds, 0.015);
  EXPECT_DOUBLE_EQ(r.sender.prepare_seconds, r.receiver.prepare_seconds);
  EXPECT_NE(r.sender.to_text().find("restore prepared on the destination before the freeze"),
            std::string::npos);
  EXPECT_NE(r.sender.to_json().find("\"prepare_seconds\""), std::string::npos);
}

TEST(MigratePreparedRestore, PreparedWithoutPreCopyStillBeforeTheFreeze) {
  Harness h;
  Outcome r = h.run();
  ASSERT_EQ(r.sender.outcome, "migrated") << r.sender.error;
  EXPECT_LT(h.events.at("restore prepared"), h.events.at("source frozen"));
  EXPECT_EQ(h.dst.released, 0);
}

TEST(MigratePreparedRestore, ASourceRollbackBeforeTheFreezeReleasesIt) {
  Harness h;
  h.pre_copy = 3;
  h.src.cancel_during_pre_dump = &h.cancel;  // Ctrl-C in round 1
  Outcome r = h.run();
  EXPECT_EQ(r.sender.outcome, "rolled back");
  EXPECT_EQ(r.sender.error, "interrupted");
  EXPECT_EQ(r.receiver.outcome, "rolled back");
  EXPECT_EQ(h.src.freezes, 0);
  EXPECT_EQ(h.src.destroys, 0);
  EXPECT_EQ(h.dst.prepares, 1);
  EXPECT_EQ(h.dst.released, 1);
  EXPECT_EQ(h.dst.restores, 0);
  EXPECT_FALSE(crx::path_exists(h.dst.session_dir));
}

TEST(MigratePreparedRestore, ACtrlCMidRoundCutsTheRoundShort) {
  Harness h;
  h.pre_copy = 3;
  h.src.cancel_mid_pre_dump = &h.cancel;
  Outcome r = h.run();
  EXPECT_TRUE(h.src.pre_dump_cut) << "round 1 ran to its end despite the Ctrl-C";
  EXPECT_EQ(r.sender.outcome, "rolled back");
  EXPECT_EQ(r.sender.error, "interrupted");
  EXPECT_EQ(r.receiver.outcome, "rolled back");
  EXPECT_EQ(h.src.freezes, 0);
  EXPECT_EQ(h.dst.released, 1);
  EXPECT_FALSE(crx::path_exists(h.dst.session_dir));
}

TEST(MigratePreparedRestore, AFailedPreparationIsARefusalAndTheSourceRunsOn) {
  Harness h;
  h.pre_copy = 2;
  h.dst.fail_prepare = true;
  Outcome r = h.run();
  EXPECT_EQ(r.sender.outcome, "rolled back");
  EXPECT_NE(r.sender.error.find("cannot create cgroup"), std::string::npos) << r.sender.error;
  EXPECT_NE(r.receiver.error.find("cannot create cgroup"), std::string::npos) << r.receiver.error;
  EXPECT_EQ(h.src.rounds, 0);
  EXPECT_EQ(h.src.freezes, 0);
  EXPECT_EQ(h.src.dumps, 0);
  EXPECT_EQ(h.src.destroys, 0);
  EXPECT_EQ(h.dst.restores, 0);
  EXPECT_EQ(h.dst.released, 0);
}

TEST(MigratePreparedRestore, AFailureAfterTheFreezeReleasesIt) {
  Harness h;
  h.pre_copy = 1;
  h.src.fail_dump = true;
  Outcome r = h.run();
  EXPECT_EQ(r.sender.outcome, "rolled back");
  EXPECT_EQ(h.src.freezes, 1);
  EXPECT_EQ(h.src.resumes, 1);
  EXPECT_EQ(h.dst.restores, 0);
  EXPECT_EQ(h.dst.released, 1);
  EXPECT_LT(h.events.at("source frozen"), h.events.at("prepared restore released"));
}

TEST(MigratePreparedRestore, AFailedRestoreReleasesIt) {
  Harness h;
  h.dst.fail_restore = true;
  Outcome r = h.run();
  EXPECT_EQ(r.sender.outcome, "rolled back");
  EXPECT_EQ(h.src.resumes, 1);
  EXPECT_EQ(h.dst.restores, 1);
  EXPECT_EQ(h.dst.released, 1);
}

TEST(MigratePreparedRestore, SwitchedOffItIsPreparedInTheFrozenWindow) {
  Harness h;
  h.pre_copy = 1;
  h.prepare_restore = false;
  Outcome r = h.run();
  ASSERT_EQ(r.sender.outcome, "migrated") << r.sender.error;
  EXPECT_EQ(h.dst.prepares, 1);
  EXPECT_GT(h.events.at("restore prepared"), h.events.at("source frozen"));
  EXPECT_EQ(phase_index(r.receiver, "prepare"), -1);
  EXPECT_EQ(r.sender.prepare_seconds, 0);
  EXPECT_EQ(r.receiver.prepare_seconds, 0);
  EXPECT_EQ(r.sender.to_json().find("\"prepare_seconds\""), std::string::npos);
}

// The final round's page channel (the destination's page server, the TCP
// connection and its handshake) is opened before the freeze: the frozen
// window holds the dump. Both reports' downtime starts at the freeze.
TEST(MigrateProtocol, TheFinalRoundsChannelOpensBeforeTheFreeze) {
  Harness h;
  h.pre_copy = 1;
  Outcome r = h.run();
  ASSERT_EQ(r.sender.outcome, "migrated") << r.sender.error;
  ASSERT_EQ(r.receiver.outcome, "migrated") << r.receiver.error;
  // The sender froze only once its page channel was through the handshake.
  EXPECT_LT(phase_index(r.sender, "open final round"), phase_index(r.sender, "freeze"));
  for (const MigrationReport* rep : {&r.sender, &r.receiver}) {
    int open = phase_index(*rep, "open final round");
    EXPECT_GE(open, 0) << rep->to_text();
    EXPECT_LT(open, phase_index(*rep, "checkpoint+transfer")) << rep->to_text();
  }
  EXPECT_EQ(h.dst.restored_core, "core of round 2");
  EXPECT_EQ(h.src.destroys, 1);
}

// With the final round's channel open, before the freeze, the source makes
// its dump ready (CriuSource: its CRIU started, its request sent) for
// exactly the dir, parent and page channel the dump then gets.
TEST(MigrateProtocol, TheFinalDumpIsPreparedBeforeTheFreezeForItsDirAndChannel) {
  Harness h;
  h.pre_copy = 1;
  Outcome r = h.run();
  ASSERT_EQ(r.sender.outcome, "migrated") << r.sender.error;
  ASSERT_EQ(h.src.prepared_dumps.size(), 1u);
  EXPECT_EQ(h.src.prepared_dumps[0], h.src.dump_dir);
  EXPECT_EQ(h.src.prepared_parent, "../1");
  EXPECT_EQ(h.src.prepared_parent, h.src.dump_parent);
  EXPECT_EQ(h.src.prepared_fd, h.src.dump_fd);
  EXPECT_LT(h.events.at("source dump prepared"), h.events.at("source frozen"));
  int prepare = phase_index(r.sender, "prepare dump");
  EXPECT_GT(prepare, phase_index(r.sender, "open final round")) << r.sender.to_text();
  EXPECT_LT(prepare, phase_index(r.sender, "freeze")) << r.sender.to_text();
}

// An older crx receive, by hand: it parses the manifest (ignoring what it
// does not know) and accepts in the words it knew, saying neither "lazy"
// nor "final_round_ahead"; then `then` goes on with the connection.
template <class Then>
auto older_receiver(TcpListener& listener, const SharedKey& key, Then then) {
  return std::async(std::launch::async, [&listener, &key, then] {
    FrameConn c(listener.accept(10s), "sender");
    c.set_timeout(10s);
    authenticate_as_server(c, key, crx::test::protocol_test_wire());
    Manifest m = parse_manifest(c.expect(FrameType::Manifest).payload);
    c.send(FrameType::Accept, R"({"bundle":")" + m.bundle + R"(","need_rootfs":false})");
    return then(c);
  });
}

// An older crx receive does not say final_round_ahead: the sender freezes
// first and opens the final round in the window, as before.
TEST(MigrateProtocol, AnOlderReceiverGetsTheFinalRoundAfterTheFreeze) {
  std::string root = temp_dir();
  auto key = SharedKey::from_bytes("0123456789abcdef-test-key");
  Events events;
  TcpListener listener(parse_host_port("127.0.0.1:0"));
  auto receiver = older_receiver(listener, key, [&events](FrameConn& c) {
    RoundStart start = parse_round_start(c.expect(FrameType::RoundStart).payload);
    bool frozen_first = events.at("source frozen") >= 0;
    c.send(FrameType::Error, "enough");
    return std::pair{start, frozen_first};
  });
  FakeSource src;
  src.events = &events;
  SenderOptions so = sender_options("127.0.0.1:" + std::to_string(listener.port()), key, root);
  so.manifest.bundle = "/b";
  auto rep = migrate_out(src, so);
  auto [start, frozen_first] = receiver.get();
  EXPECT_TRUE(start.final);
  EXPECT_FALSE(start.ahead);
  EXPECT_FALSE(start.zero_runs);  // it never said it decodes frames
  EXPECT_EQ(src.destination_decodes, false);
  EXPECT_EQ(src.destination_makes_uts_ipc_, false);  // nor that it makes them
  EXPECT_TRUE(frozen_first);
  EXPECT_EQ(rep.outcome, "rolled back");
  EXPECT_EQ(src.resumes, 1);
  EXPECT_EQ(phase_index(rep, "open final round"), -1);
  EXPECT_TRUE(src.prepared_dumps.empty());  // its channel opens in the window
  crx::remove_tree(root);
}

// A Frozen frame belongs to a final round opened ahead, once.
TEST(MigrateProtocol, AFrozenFrameOutsideAnOpenedFinalRoundIsRefused) {
  Harness h;
  auto receiver = h.lone_receiver(5s);
  FrameConn c(connect_tcp(parse_host_port(receiver->address()), 5s),
              "receiver");
  c.set_timeout(5s);
  authenticate_as_client(c, Credentials{crx::test::protocol_test_wire(), &h.key}, "control",
                         "s1");
  Manifest m;
  m.id = "c1";
  m.bundle = "/b";
  m.config_sha256 = "00";
  c.send(FrameType::Manifest, to_json(m));
  EXPECT_TRUE(parse_acceptance(c.expect(FrameType::Accept).payload).final_round_ahead);
  c.send(FrameType::Frozen);
  auto rep = receiver->report();
  EXPECT_EQ(rep.outcome, "rolled back");
  EXPECT_NE(rep.error.find("a frozen frame outside the final round's opening"), std::string::npos)
      << rep.error;
  EXPECT_TRUE(empty_or_absent(h.root + "/dst"));
  EXPECT_EQ(h.dst.restores, 0);
}

TEST(MigrateProtocol, RoundStartAheadIsForTheFinalRoundOnly) {
  RoundStart fin{3, true, "../2"};
  fin.ahead = true;
  EXPECT_TRUE(parse_round_start(to_json(fin)).ahead);
  EXPECT_FALSE(parse_round_start(to_json(RoundStart{3, true, "../2"})).ahead);
  EXPECT_EQ(to_json(RoundStart{3, true, "../2"}).find("ahead"), std::string::npos);  // as before
  EXPECT_THROW(parse_round_start(R"({"round":1,"final":false,"parent":"","ahead":true})"),
               crx::Error);
  EXPECT_FALSE(parse_acceptance(R"({"bundle":"/b","need_rootfs":false})").final_round_ahead);
  Acceptance a{"/b", false};
  a.final_round_ahead = true;
  EXPECT_TRUE(parse_acceptance(to_json(a)).final_round_ahead);
  EXPECT_EQ(frame_type_name(FrameType::Frozen), "frozen");
}

// Page channels in frames (zero_runs.hpp): every round of a migration
// whose receiver decodes them and whose source writes them.
TEST(MigrateProtocol, EveryRoundsPageChannelIsFramedWhereBothEndsCan) {
  Harness h;
  h.pre_copy = 2;
  Outcome r = h.run();
  ASSERT_EQ(r.sender.outcome, "migrated") << r.sender.error;
  EXPECT_EQ(h.src.destination_decodes, true);
  EXPECT_EQ(h.src.destination_makes_uts_ipc_, true);
  EXPECT_EQ(h.dst.framed_rounds, (std::vector<bool>{true, true, true}));
  const std::string json = r.sender.to_json();
  EXPECT_NE(json.find("\"zero_page_bytes\":12288"), std::string::npos) << json;
  EXPECT_NE(r.sender.to_text().find("12.0 KiB of zero pages sent as their count"), std::string::npos)
      << r.sender.to_text();
  EXPECT_NE(json.find("\"compressed_bytes\":40960"), std::string::npos) << json;
  EXPECT_NE(json.find("\"compressed_to_bytes\":4096"), std::string::npos) << json;
  EXPECT_NE(r.sender.to_text().find("40.0 KiB compressed to 4.0 KiB"), std::string::npos)
      << r.sender.to_text();
}

TEST(MigrateProtocol, ASourceWithoutAPageFilterFramesNothing) {
  Harness h;
  h.pre_copy = 1;
  h.src.has_page_filter = false;  // crx migrate --no-page-dedup
  Outcome r = h.run();
  ASSERT_EQ(r.sender.outcome, "migrated") << r.sender.error;
  EXPECT_EQ(h.src.destination_decodes, true);
  EXPECT_EQ(h.dst.framed_rounds, (std::vector<bool>{false, false}));
}

// Compression is asked of the source where the receiver decodes it and the
// channel is encrypted; on clear text the cipher's cost it saves is not there.
TEST(MigrateProtocol, PagesAreCompressedOnlyOnAnEncryptedChannel) {
  Harness h;
  h.pre_copy = 1;
  Outcome r = h.run();
  ASSERT_EQ(r.sender.outcome, "migrated") << r.sender.error;
  EXPECT_EQ(h.src.compress_asked, h.wire != WireSecurity::Plaintext);
  Harness clear;
  clear.pre_copy = 1;
  clear.wire = WireSecurity::Plaintext;
  r = clear.run();
  ASSERT_EQ(r.sender.outcome, "migrated") << r.sender.error;
  EXPECT_EQ(clear.src.compress_asked, false);
  EXPECT_EQ(clear.dst.framed_rounds, (std::vector<bool>{true, true}));  // still framed
}

TEST(MigrateProtocol, ZeroRunsFieldsAreOptional) {
  EXPECT_FALSE(parse_acceptance(R"({"bundle":"/b","need_rootfs":false})").zero_runs);
  EXPECT_FALSE(parse_acceptance(R"({"bundle":"/b","need_rootfs":false})").lz4_frames);
  Acceptance a{"/b", false};
  a.zero_runs = true;
  a.lz4_frames = true;
  EXPECT_TRUE(parse_acceptance(to_json(a)).zero_runs);
  EXPECT_TRUE(parse_acceptance(to_json(a)).lz4_frames);
  RoundStart start{2, false, "../1"};
  EXPECT_EQ(to_json(start).find("zero_runs"), std::string::npos);  // as before
  start.zero_runs = true;
  EXPECT_TRUE(parse_round_start(to_json(start)).zero_runs);
}

TEST(MigrateProtocol, RefusedManifestIsReportedToTheSender) {
  Harness h;
  h.id = "exists-here";
  Outcome r = h.run();
  EXPECT_EQ(r.sender.outcome, "rolled back");
  EXPECT_NE(r.sender.error.find("container exists-here already exists"), std::string::npos)
      << r.sender.error;
  EXPECT_EQ(h.src.freezes, 0);
}

TEST(MigrateProtocol, ReceiverDyingMidTransferResumesTheSource) {
  // A receiver that authenticates, accepts, and vanishes at the first round.
  std::string root = temp_dir();
  auto key = SharedKey::from_bytes("0123456789abcdef-test-key");
  TcpListener listener(parse_host_port("127.0.0.1:0"));
  auto receiver = std::async(std::launch::async, [&] {
    FrameConn c(listener.accept(10s), "sender");
    authenticate_as_server(c, key, crx::test::protocol_test_wire());
    Manifest m = parse_manifest(c.expect(FrameType::Manifest).payload);
    c.send(FrameType::Accept, to_json(Acceptance{m.bundle, false}));
    c.expect(FrameType::RoundStart);
    // dies: the connection closes
  });
  FakeSource src;
  SenderOptions so = sender_options("127.0.0.1:" + std::to_string(listener.port()), key, root);
  auto rep = migrate_out(src, so);
  receiver.get();
  EXPECT_EQ(rep.outcome, "rolled back");
  EXPECT_NE(rep.error.find("closed the connection"), std::string::npos) << rep.error;
  EXPECT_EQ(src.freezes, 1);
  EXPECT_EQ(src.resumes, 1);
  EXPECT_EQ(src.destroys, 0);
  crx::remove_tree(root);
}

TEST(MigrateProtocol, ReceiverNotListeningIsAClearErrorAndTouchesNothing) {
  FakeSource src;
  auto key = SharedKey::from_bytes("0123456789abcdef-test-key");
  int port;
  {
    TcpListener l(parse_host_port("127.0.0.1:0"));
    port = l.port();
  }
  std::string root = temp_dir();
  SenderOptions so = sender_options("127.0.0.1:" + std::to_string(port), key, root);
  auto rep = migrate_out(src, so);
  EXPECT_EQ(rep.outcome, "rolled back");
  EXPECT_NE(rep.error.find("Connection refused (is `crx receive` listening there?)"),
            std::string::npos)
      << rep.error;
  EXPECT_EQ(src.freezes + src.resumes + src.destroys, 0);
  EXPECT_FALSE(crx::path_exists(root + "/src"));
  crx::remove_tree(root);
}

TEST(MigrateProtocol, GarbageSenderIsRefusedAndLeavesNothing) {
  Harness h;
  auto receiver = h.lone_receiver(5s);
  auto fd = connect_tcp(parse_host_port(receiver->address()), 5s);
  std::string junk = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
  ASSERT_EQ(::write(fd.get(), junk.data(), junk.size()), static_cast<ssize_t>(junk.size()));
  auto rep = receiver->report();
  EXPECT_EQ(rep.outcome, "rolled back");
  EXPECT_NE(rep.error.find("bad magic"), std::string::npos) << rep.error;
  EXPECT_FALSE(crx::path_exists(h.root + "/dst"));
  EXPECT_EQ(h.dst.restores, 0);
}

TEST(MigrateProtocol, ImageNamesThatEscapeTheImagesDirAreRefused) {
  EXPECT_THROW(check_image_name("../etc/passwd"), crx::Error);
  EXPECT_THROW(check_image_name("1/../../x"), crx::Error);
  EXPECT_THROW(check_image_name("core.img"), crx::Error);
  EXPECT_NO_THROW(check_image_name("2/core-1.img"));
  std::string root = temp_dir();
  ImageSink sink(root, 1 << 20);
  Frame f{FrameType::ImageSymlink, encode_image_symlink("2/parent", "/etc")};
  EXPECT_THROW(sink.handle(f), crx::Error);
  Frame big{FrameType::ImageData, encode_image_data("1/x", 0, std::string(2 << 20, 'x'))};
  EXPECT_THROW(sink.handle(big), crx::Error);
  crx::remove_tree(root);
}

TEST(MigrateProtocol, ImageDataOutOfOrderIsRefused) {
  // A sparse file would take disk the receiver's limit does not count: data
  // must continue where the file's previous data ended.
  std::string root = temp_dir();
  ImageSink sink(root, 1 << 20);
  EXPECT_TRUE(sink.handle({FrameType::ImageData, encode_image_data("1/x", 0, "abcd")}));
  EXPECT_TRUE(sink.handle({FrameType::ImageData, encode_image_data("1/x", 4, "efgh")}));
  for (uint64_t at : {uint64_t{4}, uint64_t{9}, uint64_t{1} << 40}) {
    try {
      sink.handle({FrameType::ImageData, encode_image_data("1/x", at, "z")});
      ADD_FAILURE() << "accepted data at " << at;
    } catch (const crx::Error& e) {
      EXPECT_EQ(e.cause(), crx::Cause::Invalid) << e.what();
      EXPECT_NE(std::string(e.what()).find("expected 8"), std::string::npos) << e.what();
    }
  }
  // a new file starts at 0, not elsewhere
  EXPECT_THROW(sink.handle({FrameType::ImageData, encode_image_data("1/y", 4096, "z")}),
               crx::Error);
  EXPECT_TRUE(sink.handle({FrameType::ImageClose, encode_image_close("1/x", 8)}));
  EXPECT_EQ(sink.bytes(), 8u);
  crx::remove_tree(root);
}

// A scripted receiver's part up to the sender's RoundDone: the handshake,
// the manifest accepted, one round (a final dump with no pre-copy) whose
// page channel it drains.
FrameConn receive_until_round_done(TcpListener& listener, const SharedKey& key) {
  FrameConn c(listener.accept(10s), "sender");
  c.set_timeout(10s);
  authenticate_as_server(c, key, crx::test::protocol_test_wire());
  Manifest m = parse_manifest(c.expect(FrameType::Manifest).payload);
  c.send(FrameType::Accept, to_json(Acceptance{m.bundle, false}));
  c.expect(FrameType::RoundStart);
  c.send(FrameType::PageServerReady);
  FrameConn pages(listener.accept(10s), "pages");
  authenticate_as_server(pages, key, crx::test::protocol_test_wire());
  crx::UniqueFd page_fd = pages.release_fd();
  char buf[65536];
  while (::read(page_fd.get(), buf, sizeof buf) > 0) {
  }
  for (;;) {
    Frame f = c.receive();
    if (f.type == FrameType::RoundDone) break;
  }
  return c;
}

TEST(MigrateProtocol, LostCommitAnswerKeepsTheSourceFrozenNotRunning) {
  // A receiver that restores, gets the commit and vanishes before answering:
  // the sender cannot know whether the destination runs the container, so it
  // neither resumes (two copies) nor destroys (maybe none) the source.
  std::string root = temp_dir();
  auto key = SharedKey::from_bytes("0123456789abcdef-test-key");
  TcpListener listener(parse_host_port("127.0.0.1:0"));
  auto receiver = std::async(std::launch::async, [&] {
    FrameConn c = receive_until_round_done(listener, key);
    c.send(FrameType::RoundAck, to_json(RoundAck{1}));
    c.expect(FrameType::DumpDone);
    c.send(FrameType::RestoreOk);
    c.expect(FrameType::Commit);
    // dies here
  });
  FakeSource src;
  SenderOptions so = sender_options("127.0.0.1:" + std::to_string(listener.port()), key, root);
  auto rep = migrate_out(src, so);
  receiver.get();
  EXPECT_EQ(rep.outcome, "in doubt") << rep.error;
  EXPECT_NE(rep.error.find("stays frozen"), std::string::npos) << rep.error;
  // A receiver that did not say it takes a LateState gets none.
  EXPECT_EQ(src.destination_takes_late_state_, false);
  EXPECT_EQ(src.destination_has_elf_files_, false);
  EXPECT_EQ(src.late_reads, 0);
  EXPECT_EQ(src.freezes, 1);
  EXPECT_EQ(src.resumes, 0);
  EXPECT_EQ(src.destroys, 0);
  crx::remove_tree(root);
}

// The final round's DumpDone follows its RoundDone without waiting for the
// RoundAck (one round trip less in the frozen window). A receiver that
// waits for it before acknowledging gets it; one that then refuses the
// round still makes the sender roll back.
TEST(MigrateProtocol, TheFinalDumpDoneComesBeforeTheRoundAck) {
  for (bool refuse : {false, true}) {
    SCOPED_TRACE(refuse ? "the round refused" : "the round acknowledged");
    std::string root = temp_dir();
    auto key = SharedKey::from_bytes("0123456789abcdef-test-key");
    TcpListener listener(parse_host_port("127.0.0.1:0"));
    auto receiver = std::async(std::launch::async, [&] {
      FrameConn c = receive_until_round_done(listener, key);
      c.set_timeout(2s);
      c.expect(FrameType::DumpDone);  // before any ack
      c.set_timeout(10s);
      if (refuse) {
        c.send(FrameType::Error, "the round's pages are incomplete");
        return;
      }
      c.send(FrameType::RoundAck, to_json(RoundAck{1}));
      c.send(FrameType::RestoreOk);
      c.expect(FrameType::Commit);
      c.send(FrameType::CommitAck, to_json(CommitAck{}));
    });
    FakeSource src;
    SenderOptions so = sender_options("127.0.0.1:" + std::to_string(listener.port()), key, root);
    auto rep = migrate_out(src, so);
    receiver.get();
    EXPECT_EQ(rep.outcome, refuse ? "rolled back" : "migrated") << rep.error;
    EXPECT_EQ(src.freezes, 1);
    EXPECT_EQ(src.resumes, refuse ? 1 : 0);
    EXPECT_EQ(src.destroys, refuse ? 0 : 1);
    crx::remove_tree(root);
  }
}

TEST(MigrateProtocol, ManifestParsingNamesTheProblem) {
  try {
    parse_manifest("{\"protocol\":1,\"bundle\":\"/b\",\"config_sha256\":\"x\"}");
    FAIL();
  } catch (const crx::Error& e) {
    EXPECT_EQ(std::string(e.what()), "malformed manifest frame: no \"id\"");
  }
  try {
    parse_manifest("{\"protocol\":7}");
    FAIL();
  } catch (const crx::Error& e) {
    EXPECT_EQ(std::string(e.what()), "sender speaks migration protocol 7, this crx speaks 1");
  }
  Manifest m;
  m.id = "c1";
  m.bundle = "/b";
  m.config_sha256 = "ab";
  m.flags.tcp_established = true;
  Manifest back = parse_manifest(to_json(m));
  EXPECT_EQ(back.id, "c1");
  EXPECT_TRUE(back.flags.tcp_established);
}

}  // namespace

TEST(MigrateProtocol, DestinationVerbsTimesReachTheSendersReport) {
  Harness h;
  h.dst.verbs_note =
      R"({"ok":true,"recreate_ms":12.5,"pin_ms":3.25,"resume_ms":7,"objects":{"qp":16,"cq":1}})";
  Outcome r = h.run();
  ASSERT_EQ(r.sender.outcome, "migrated") << r.sender.error;
  ASSERT_TRUE(r.sender.verbs.has_value());
  ASSERT_TRUE(r.sender.verbs->restore.has_value());
  EXPECT_TRUE(r.sender.verbs->restore->ok);
  EXPECT_DOUBLE_EQ(r.sender.verbs->restore->recreate_ms, 12.5);
  EXPECT_DOUBLE_EQ(r.sender.verbs->restore->pin_ms, 3.25);
  EXPECT_DOUBLE_EQ(r.sender.verbs->resume_ms(), 7);
  EXPECT_EQ(r.sender.verbs->objects().at("qp"), 16u);
  EXPECT_NE(r.sender.to_json().find("\"recreate_ms\":12.5"), std::string::npos);
}

TEST(MigrateProtocol, CriusRestoreTimesReachBothReports) {
  Harness h;
  h.dst.criu_stats = crx::test::criu_restore_stats_image(250000, 1750000, 4096);
  Outcome r = h.run();
  ASSERT_EQ(r.sender.outcome, "migrated") << r.sender.error;
  EXPECT_EQ(r.sender.error, "");
  for (const auto* rep : {&r.sender, &r.receiver}) {
    ASSERT_TRUE(rep->criu_restore) << rep->role;
    EXPECT_DOUBLE_EQ(rep->criu_restore->restore_seconds, 1.75);
    EXPECT_DOUBLE_EQ(rep->criu_restore->forking_seconds, 0.25);
    EXPECT_EQ(rep->criu_restore->pages_restored, 4096u);
    EXPECT_NE(rep->to_text().find("CRIU's restore: 1.750 s, forking 0.250 s, 4096 pages restored"),
              std::string::npos) << rep->to_text();
    EXPECT_NE(rep->to_json().find("\"criu_restore\":{\"forking_seconds\":0.25"), std::string::npos)
        << rep->to_json();
  }
}

TEST(MigrateProtocol, NoStatsRestoreNoCriuRestoreInTheReport) {
  Harness h;
  Outcome r = h.run();
  ASSERT_EQ(r.sender.outcome, "migrated") << r.sender.error;
  EXPECT_FALSE(r.sender.criu_restore);
  EXPECT_EQ(r.sender.to_json().find("criu_restore"), std::string::npos);
}

TEST(MigrateProtocol, CommitAckParsing) {
  using crx::migrate::CommitAck;
  using crx::migrate::parse_commit_ack;
  CommitAck none = parse_commit_ack("");  // a receiver that sends no notes
  EXPECT_TRUE(none.verbs_restore.empty());
  EXPECT_TRUE(none.verbs_resume.empty());
  CommitAck a = parse_commit_ack(crx::migrate::to_json(CommitAck{R"({"ok":true})", ""}));
  EXPECT_EQ(a.verbs_restore, R"({"ok":true})");
  EXPECT_TRUE(a.verbs_resume.empty());
  // a note that is not JSON is left out rather than sent
  EXPECT_EQ(crx::migrate::to_json(CommitAck{"not json", ""}), "{}");
  // CRIU's restore statistics ride along as an object of numbers
  CommitAck c = parse_commit_ack(R"({"criu_restore":{"restore_seconds":1}})");
  EXPECT_EQ(c.criu_restore, R"({"restore_seconds":1})");
  EXPECT_THROW(crx::migrate::criu_restore_from_json(nlohmann::json::parse(c.criu_restore)), crx::Error);
  try {
    parse_commit_ack(R"({"verbs_restore":5})");
    FAIL() << "a note that is not an object must be refused";
  } catch (const crx::Error& e) {
    EXPECT_NE(std::string(e.what()).find("verbs_restore"), std::string::npos) << e.what();
  }
}

// Found by tests/fuzz (fuzz_migrate_manifest): an integer field given as a
// float out of the type's range was cast (undefined behaviour); integer
// fields take integers only.
TEST(MigrateProtocolBodies, IntegerFieldsRefuseFloats) {
  for (std::string text : {R"({"image_bytes":1.5e100})", R"({"image_bytes":2.5})"}) {
    try {
      crx::migrate::parse_round_done(text);
      ADD_FAILURE() << "accepted " << text;
    } catch (const crx::Error& e) {
      EXPECT_NE(std::string(e.what()).find("\"image_bytes\" is not an integer"), std::string::npos)
          << e.what();
    }
  }
  EXPECT_THROW(crx::migrate::parse_round_start(R"({"round":1e10,"final":true,"parent":""})"),
               crx::Error);
  EXPECT_EQ(crx::migrate::parse_round_done(R"({"image_bytes":7})").image_bytes, 7u);
  // and in the rdma inventory, lists included (a number too large for an
  // integer is a float to nlohmann)
  const std::string rdma =
      R"("devices":["rxe0"],"mrns":[3],"contexts":1,"objects":{"pd":1,"mr":1,"cq":1,"srq":0,"qp":1})";
  for (std::string bad : {R"("qpns":[178888888888888888888888888888888888888],"mr_bytes":0)",
                          R"("qpns":[17],"mr_bytes":1e300)"}) {
    std::string text = R"({"protocol":1,"id":"c1","bundle":"/b","config_sha256":"00","rdma":{)" +
                       rdma + "," + bad + "}}";
    try {
      crx::migrate::parse_manifest(text);
      ADD_FAILURE() << "accepted " << bad;
    } catch (const crx::Error& e) {
      EXPECT_NE(std::string(e.what()).find("integer"), std::string::npos) << e.what();
    }
  }
}

// Post-copy (--lazy) --------------------------------------------------------

TEST(MigrateLazy, ResumesBeforeTheMemoryAndDestroysTheSourceAfterTheLastPage) {
  Harness h;
  h.lazy = true;
  Outcome r = h.run();
  ASSERT_EQ(r.sender.outcome, "migrated") << r.sender.error;
  EXPECT_EQ(r.receiver.outcome, "migrated") << r.receiver.error;
  // One final round, no memory in it: the memory came in the lazy phase.
  ASSERT_EQ(r.sender.rounds.size(), 1u);
  EXPECT_TRUE(r.sender.rounds[0].final);
  EXPECT_EQ(h.src.lazy_dumps, 1);
  EXPECT_TRUE(h.src.prepared_dumps.empty());  // a lazy dump's CRIU is its own
  // What the source chose for its lazy dump is in the report, as for a
  // final dump.
  EXPECT_TRUE(r.sender.rounds[0].netns_moved_empty);
  EXPECT_EQ(h.dst.restored_core, "core of the lazy dump");
  // The destination ran before its memory was all there; the source went
  // only after the last page, never resumed.
  EXPECT_LT(h.events.at("destination resumed"), h.events.at("destination has every page"));
  EXPECT_LT(h.events.at("destination has every page"), h.events.at("source destroyed"));
  EXPECT_LT(h.events.at("source pages served"), h.events.at("source destroyed"));
  EXPECT_EQ(h.src.resumes, 0);
  EXPECT_EQ(h.src.destroys, 1);
  // Both reports show the lazy phase with the destination's numbers.
  ASSERT_TRUE(r.sender.lazy);
  ASSERT_TRUE(r.receiver.lazy);
  EXPECT_EQ(r.sender.lazy->bytes, 1u << 20);
  EXPECT_EQ(r.sender.lazy->pages, 256u);
  EXPECT_EQ(r.sender.lazy->on_demand_pages, 3u);
  EXPECT_EQ(r.sender.lazy->pushed_pages(), 253u);
  EXPECT_EQ(r.sender.page_bytes(), 1u << 20);
  std::string j = r.sender.to_json();
  EXPECT_NE(j.find("\"lazy\":{"), std::string::npos) << j;
  EXPECT_NE(j.find("\"pushed_pages\":253"), std::string::npos) << j;
  EXPECT_NE(j.find("\"on_demand_bytes\":12288"), std::string::npos) << j;
  std::string t = r.sender.to_text();
  EXPECT_NE(t.find("lazy phase: "), std::string::npos) << t;
  EXPECT_NE(t.find("12.0 KiB on demand (3 pages, 4 faults)"), std::string::npos) << t;
  bool phase = false;
  for (const auto& p : r.sender.phases) phase |= p.name == "lazy pages";
  EXPECT_TRUE(phase);
}

TEST(MigrateLazy, ALinkLostInTheLazyPhaseKillsTheDestinationCopyAndKeepsTheSourceFrozen) {
  Harness h;
  h.lazy = true;
  h.dst.fail_lazy = true;
  Outcome r = h.run();
  EXPECT_EQ(r.sender.outcome, "lazy phase failed") << r.sender.error;
  EXPECT_NE(r.sender.error.find("page channel broke"), std::string::npos) << r.sender.error;
  EXPECT_NE(r.sender.error.find("crx resume c1"), std::string::npos) << r.sender.error;
  EXPECT_EQ(r.receiver.outcome, "lazy phase failed") << r.receiver.error;
  // Never two copies, never a copy with holes: the destination's copy is
  // killed while the daemon still holds its userfaultfd; the source is
  // neither resumed (it would rewind the container) nor destroyed.
  EXPECT_EQ(h.dst.discards, 1);
  EXPECT_GE(h.events.at("destination copy killed"), 0);
  EXPECT_LT(h.events.at("destination copy killed"), h.events.at("lazy pages gone"));
  EXPECT_EQ(h.src.resumes, 0);
  EXPECT_EQ(h.src.destroys, 0);
}

TEST(MigrateLazy, ARestoreFailureBeforeTheCommitEndsThePageServerThenThawsTheSource) {
  Harness h;
  h.lazy = true;
  h.dst.fail_restore = true;
  Outcome r = h.run();
  EXPECT_EQ(r.sender.outcome, "rolled back");
  EXPECT_EQ(h.src.resumes, 1);
  EXPECT_EQ(h.src.destroys, 0);
  // CRIU's page server lets go of the tasks before they run again.
  EXPECT_LT(h.events.at("lazy dump gone"), h.events.at("source resumed"));
}

TEST(MigrateLazy, ADestinationThatCannotIsRefusedBeforeTheFreeze) {
  Harness h;
  h.lazy = true;
  h.dst.can_lazy = false;
  Outcome r = h.run();
  EXPECT_EQ(r.sender.outcome, "rolled back");
  EXPECT_NE(r.sender.error.find("cannot restore post-copy"), std::string::npos) << r.sender.error;
  EXPECT_EQ(h.src.freezes, 0);
  EXPECT_EQ(h.dst.restores, 0);
}

TEST(MigrateLazy, VerbsObjectsAreRefusedByTheReceiverBeforeTheFreeze) {
  Harness h;
  h.lazy = true;
  crx::rdma::RdmaInventory inv;
  inv.contexts = 1;
  inv.devices = {"rxe0"};
  inv.mr_bytes = 1 << 20;
  // The sender refuses first (crx migrate); a sender that does not must
  // still be stopped here.
  auto receiver = h.lone_receiver(10s);
  SenderOptions so = sender_options(receiver->address(), h.key, h.root);
  so.manifest.bundle = "/bundles/c1";
  so.manifest.lazy = true;
  so.manifest.rdma = inv;
  so.timeout = 10s;
  auto rep = migrate_out(h.src, so);
  auto rrep = receiver->report();
  EXPECT_EQ(rep.outcome, "rolled back");
  EXPECT_NE(rep.error.find("verbs objects"), std::string::npos) << rep.error;
  EXPECT_NE(rrep.error.find("verbs objects"), std::string::npos) << rrep.error;
  EXPECT_EQ(h.src.freezes, 0);
}

TEST(MigrateLazy, PreCopyAndLazyExcludeEachOtherBeforeAnythingRuns) {
  // Refused before the sender connects: no receiver needed (port 1: none).
  std::string root = temp_dir();
  auto key = SharedKey::from_bytes("0123456789abcdef-test-key");
  FakeSource src;
  SenderOptions so = sender_options("127.0.0.1:1", key, root);
  so.manifest.lazy = true;
  so.pre_copy = PreCopyPolicy{2, 20};
  auto rep = migrate_out(src, so);
  EXPECT_EQ(rep.outcome, "rolled back");
  EXPECT_NE(rep.error.find("--lazy and --pre-copy"), std::string::npos) << rep.error;
  EXPECT_EQ(src.freezes, 0);
  EXPECT_EQ(src.rounds, 0);
  crx::remove_tree(root);
}

TEST(MigrateLazy, AnOlderReceiverThatDoesNotSayLazyIsLeftBeforeTheFreeze) {
  // An older crx receive: parses the manifest (ignoring "lazy") and
  // accepts without saying lazy; then it would wait for the memory in the
  // final round. The sender stops at its Accept.
  std::string root = temp_dir();
  auto key = SharedKey::from_bytes("0123456789abcdef-test-key");
  TcpListener listener(parse_host_port("127.0.0.1:0"));
  auto receiver = older_receiver(listener, key, [](FrameConn& c) {
    return c.receive();  // the sender's Abort
  });
  FakeSource src;
  SenderOptions so = sender_options("127.0.0.1:" + std::to_string(listener.port()), key, root);
  so.manifest.bundle = "/b";
  so.manifest.lazy = true;
  auto rep = migrate_out(src, so);
  Frame abort = receiver.get();
  EXPECT_EQ(rep.outcome, "rolled back");
  EXPECT_NE(rep.error.find("does not take post-copy migrations"), std::string::npos) << rep.error;
  EXPECT_EQ(abort.type, FrameType::Abort);
  EXPECT_EQ(src.freezes, 0);
  EXPECT_EQ(src.dumps, 0);
  crx::remove_tree(root);
}

// Pages filled after the resume (runtime/migrate/README.md): a pre-copy
// migration whose destination resumes before copying the pages in.
TEST(MigrateFillAfterResume, TheSourceGoesOnlyOnceTheDestinationFilledTheMemory) {
  Harness h;
  h.pre_copy = 1;
  h.fill = FillAfterResume::Always;
  Outcome r = h.run();
  ASSERT_EQ(r.sender.outcome, "migrated") << r.sender.error;
  EXPECT_EQ(r.receiver.outcome, "migrated") << r.receiver.error;
  // The restore left the pages to a daemon on the final round's images
  // (which link to round 1's), and the container ran before they were in.
  EXPECT_EQ(h.dst.restores_without_pages, 1);
  ASSERT_EQ(h.dst.fill_dirs.size(), 1u);
  EXPECT_EQ(h.dst.fill_dirs[0], h.dst.session_dir + "/2");
  EXPECT_EQ(h.dst.parent_link, "../1");
  // Its daemon was readied for that round before the freeze, and used.
  EXPECT_EQ(h.dst.ready_dirs, std::vector<std::string>{h.dst.session_dir + "/2"});
  EXPECT_EQ(h.dst.fill_aheads, std::vector<bool>{true});
  EXPECT_LT(h.events.at("fill readied"), h.events.at("source frozen"));
  EXPECT_EQ(h.events.at("readied fill dropped"), -1);
  EXPECT_LT(h.events.at("restore leaves the pages to the daemon"),
            h.events.at("destination resumed"));
  EXPECT_LT(h.events.at("destination resumed"), h.events.at("destination has every page"));
  // The source, which has every page, goes only after the last one is in.
  EXPECT_LT(h.events.at("destination has every page"), h.events.at("source destroyed"));
  EXPECT_EQ(h.src.resumes, 0);
  EXPECT_EQ(h.src.destroys, 1);
  EXPECT_EQ(h.dst.discards, 0);
  // Both reports say so, with the destination's numbers; no lazy phase.
  ASSERT_TRUE(r.sender.fill);
  ASSERT_TRUE(r.receiver.fill);
  EXPECT_FALSE(r.sender.lazy);
  EXPECT_EQ(r.sender.fill->pages, 256u);
  EXPECT_EQ(r.sender.fill->on_demand_pages, 3u);
  std::string t = r.sender.to_text();
  EXPECT_NE(t.find("memory filled after the resume: "), std::string::npos) << t;
  EXPECT_NE(t.find("1.0 MiB (256 pages), 12.0 KiB of it on demand (3 pages, 4 faults)"),
            std::string::npos)
      << t;
  std::string j = r.sender.to_json();
  EXPECT_NE(j.find("\"fill_after_resume\":{"), std::string::npos) << j;
  bool phase = false;
  for (const auto& p : r.sender.phases) phase |= p.name == "fill after resume";
  EXPECT_TRUE(phase);
  // The fill is not downtime: the sender's window closed at the CommitAck.
  EXPECT_FALSE(crx::path_exists(h.root + "/src"));
}

TEST(MigrateFillAfterResume, AFillThatFailsKillsTheCopyAndLeavesTheSourceFrozen) {
  Harness h;
  h.pre_copy = 1;
  h.fill = FillAfterResume::Always;
  h.dst.fail_lazy = true;
  Outcome r = h.run();
  EXPECT_EQ(r.sender.outcome, "fill failed") << r.sender.error;
  EXPECT_NE(r.sender.error.find("exited with status 1"), std::string::npos) << r.sender.error;
  EXPECT_NE(r.sender.error.find("crx resume c1"), std::string::npos) << r.sender.error;
  EXPECT_EQ(r.receiver.outcome, "fill failed") << r.receiver.error;
  // Killed while the daemon still holds its userfaultfds: never a copy
  // that reads zeros; the source neither resumed (that would rewind the
  // container past what the destination's copy did) nor destroyed.
  EXPECT_EQ(h.dst.discards, 1);
  EXPECT_LT(h.events.at("destination copy killed"), h.events.at("lazy pages gone"));
  EXPECT_EQ(h.src.resumes, 0);
  EXPECT_EQ(h.src.destroys, 0);
}

TEST(MigrateFillAfterResume, EveryPageBeforeTheResumeWhenTheFillDoesNotApply) {
  // A migration with one pre-copy round, `fill` on the receiver and what
  // `setup` changes: every page copied in before the resume. Returns how
  // often the fill was planned.
  auto every_page_first = [](FillAfterResume fill, const char* why,
                             const std::function<void(Harness&)>& setup) -> size_t {
    Harness h;
    h.pre_copy = 1;
    h.fill = fill;
    setup(h);
    Outcome r = h.run();
    EXPECT_EQ(r.sender.outcome, "migrated") << why << ": " << r.sender.error;
    EXPECT_EQ(h.dst.restores_without_pages, 0) << why;
    EXPECT_FALSE(r.sender.fill) << why;
    EXPECT_FALSE(r.receiver.fill) << why;
    EXPECT_EQ(h.src.destroys, 1) << why;
    // What was readied before the freeze went unused, and was dropped.
    EXPECT_EQ(h.events.at("fill readied") >= 0, h.events.at("readied fill dropped") >= 0) << why;
    return h.dst.fill_dirs.size();
  };
  auto as_is = [](Harness&) {};
  // auto: the first round brought less than kFillAfterResumeMinBytes; no
  // plan is made.
  EXPECT_EQ(every_page_first(FillAfterResume::Auto, "auto, little memory",
                             [](Harness& h) {
                               h.src.round_bytes = {kFillAfterResumeMinBytes / 2, 1 << 20};
                             }),
            0u);
  // auto: the first round brought enough, but the plan leaves only 1 MiB.
  EXPECT_EQ(every_page_first(FillAfterResume::Auto, "auto, little to fill",
                             [](Harness& h) {
                               h.src.round_bytes = {kFillAfterResumeMinBytes, 1 << 20};
                             }),
            1u);
  // always: even that.
  every_page_first(FillAfterResume::Always, "always, nothing to fill",
                   [](Harness& h) { h.dst.lazy_bytes = 0; });
  every_page_first(FillAfterResume::Never, "never", as_is);
  EXPECT_EQ(every_page_first(FillAfterResume::Always, "no userfaultfd here",
                             [](Harness& h) { h.dst.can_fill = false; }),
            0u);
  // Pinned MRs are written by the NIC, which does not fault.
  EXPECT_EQ(every_page_first(FillAfterResume::Always, "verbs objects",
                             [](Harness& h) {
                               h.rdma.emplace();
                               h.rdma->contexts = 1;
                               h.rdma->devices = {"rxe0"};
                             }),
            0u);
  // Verbs objects the manifest did not list (made during pre-copy): the
  // final images say so.
  EXPECT_EQ(every_page_first(FillAfterResume::Always, "verbs objects made since the manifest",
                             [](Harness& h) { h.src.verbs_at_final_dump = true; }),
            0u);
  // A plan that fails is no failed migration: every page is copied in.
  EXPECT_EQ(every_page_first(FillAfterResume::Always, "a plan that fails",
                             [](Harness& h) { h.dst.fail_plan = true; }),
            1u);
}

TEST(MigrateFillAfterResume, WhatWasReadiedGoesWithARollback) {
  // The final round opened, the fill readied for it, then the final dump
  // fails: the receiver drops it with the session.
  Harness h;
  h.pre_copy = 1;
  h.fill = FillAfterResume::Always;
  h.src.fail_dump = true;
  Outcome r = h.run();
  EXPECT_EQ(r.sender.outcome, "rolled back") << r.sender.error;
  EXPECT_EQ(h.dst.ready_dirs.size(), 1u);
  EXPECT_GE(h.events.at("readied fill dropped"), 0);
  EXPECT_EQ(h.src.resumes, 1);
}

TEST(MigrateFillAfterResume, NothingIsReadiedWhereTheFillCannotApply) {
  // Little memory under auto, or the fill off: no daemon started ahead.
  for (FillAfterResume fill : {FillAfterResume::Auto, FillAfterResume::Never}) {
    Harness h;
    h.pre_copy = 1;
    h.fill = fill;
    h.src.round_bytes = {kFillAfterResumeMinBytes / 2, 1 << 20};
    Outcome r = h.run();
    EXPECT_EQ(r.sender.outcome, "migrated") << r.sender.error;
    EXPECT_TRUE(h.dst.ready_dirs.empty());
  }
}

TEST(MigrateFillAfterResume, NegotiationFields) {
  Manifest m;
  m.id = "c1";
  EXPECT_FALSE(parse_manifest(to_json(m)).fill_after_resume);  // an older sender's
  m.fill_after_resume = true;
  EXPECT_TRUE(parse_manifest(to_json(m)).fill_after_resume);
  CommitAck a;
  EXPECT_FALSE(parse_commit_ack(to_json(a)).filling_after_resume);
  EXPECT_FALSE(parse_commit_ack("").filling_after_resume);  // an older receiver's
  a.filling_after_resume = true;
  EXPECT_TRUE(parse_commit_ack(to_json(a)).filling_after_resume);
  EXPECT_THROW(parse_commit_ack("{\"filling_after_resume\":1}"), crx::Error);
}

TEST(MigrateLazy, NegotiationFieldsAndLazyDoneParsing) {
  Manifest m;
  m.id = "c1";
  m.bundle = "/b";
  EXPECT_EQ(to_json(m).find("lazy"), std::string::npos);  // what older receivers saw
  m.lazy = true;
  EXPECT_TRUE(parse_manifest(to_json(m)).lazy);
  EXPECT_FALSE(parse_acceptance(R"({"bundle":"/b","need_rootfs":false})").lazy);
  EXPECT_TRUE(parse_acceptance(to_json(Acceptance{"/b", false, true})).lazy);
  LazyStats s;
  s.seconds = 1.5;
  s.bytes = 1 << 20;
  s.pages = 256;
  s.on_demand_pages = 10;
  s.faults = 12;
  LazyStats back = parse_lazy_done(to_json(s));
  EXPECT_EQ(back.pages, 256u);
  EXPECT_EQ(back.pushed_pages(), 246u);
  EXPECT_EQ(back.faults, 12u);
  EXPECT_THROW(parse_lazy_done(R"({"seconds":1,"bytes":2})"), crx::Error);
  EXPECT_THROW(parse_lazy_done(R"({"seconds":1,"bytes":2.5,"pages":1})"), crx::Error);
  EXPECT_EQ(frame_type_name(FrameType::LazyDone), "lazy-done");
}
