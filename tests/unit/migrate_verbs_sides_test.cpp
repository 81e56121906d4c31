// Migration of a container with verbs objects, CRIU and RDMA replaced by
// fakes: the receiver's preflight refuses before the source is frozen; a
// rollback resumes the source's stopped QPs before it thaws; the
// destination resumes the restored QPs only after the commit.
#include <gtest/gtest.h>
#include <unistd.h>

#include <future>
#include <optional>
#include <thread>

#include "common/error.hpp"
#include "common/fs.hpp"
#include "fake_rdma_host.hpp"
#include "migrate_test_wire.hpp"
#include "migrate/receiver.hpp"
#include "migrate/sender.hpp"
#include "migrate/verbs_destination.hpp"
#include "migrate/verbs_source.hpp"
#include "rdma/plugin_stats.hpp"
#include "rdma/rdma_error.hpp"

namespace {

using namespace crx;
using namespace crx::migrate;
using namespace std::chrono_literals;

// One log of calls on both sides, in order.
struct Calls {
  std::mutex m;
  std::vector<std::string> v;
  void add(const std::string& s) {
    std::lock_guard l(m);
    v.push_back(s);
  }
  int count(const std::string& s) {
    std::lock_guard l(m);
    return static_cast<int>(std::count(v.begin(), v.end(), s));
  }
  size_t index(const std::string& s) {
    std::lock_guard l(m);
    return static_cast<size_t>(std::find(v.begin(), v.end(), s) - v.begin());
  }
};

struct FakeQps : rdma::StoppedQps {
  Calls& calls;
  std::string side;
  bool fail = false;
  int qps = 2;  // how many a stop or resume finds
  FakeQps(Calls& c, std::string s) : calls(c), side(std::move(s)) {}
  int resume_stopped(const std::string& id) override {
    calls.add(side + " resume QPs " + id);
    if (fail) throw rdma::RdmaError(rdma::RdmaCause::VerbsCall, "resume: Input/output error", EIO);
    return qps;
  }
  bool fail_stop = false;
  int stop_all(const std::string& id) override {
    calls.add(side + " stop QPs " + id);
    if (fail_stop) throw rdma::RdmaError(rdma::RdmaCause::VerbsCall, "stop: Input/output error", EIO);
    return qps;
  }
};

struct FakeSource : SourceSide {
  std::unique_ptr<crx::migrate::LazyDump> lazy_dump(const std::string&, crx::UniqueFd) override {
    throw crx::Error("no post-copy here");
  }
  crx::migrate::RoundStats last_round() const override { return {}; }
  bool zero_runs(bool decodes) override { return decodes; }
  bool compress_pages(bool decodes) override { return decodes; }
  void destination_makes_uts_ipc(bool) override {}
  void destination_takes_late_state(bool) override {}
  void destination_has_elf_files(bool) override {}
  void destination_cgroup(const std::string&) override {}
  crx::migrate::LateState late_state() override { return {}; }
  Calls& calls;
  bool fail_dump = false, fail_pre_dump = false;
  bool dump_verbs = true;  // the final dump finds verbs objects
  std::vector<std::string> parents;  // given to each pre-dump and dump, in order
  std::optional<ParentPages> final_pages;  // given to the dump
  explicit FakeSource(Calls& c) : calls(c) {}
  void pre_dump(const std::string& dir, const std::string& parent, int fd) override {
    parents.push_back(parent);
    calls.add("pre-dump");
    if (fail_pre_dump) throw Error("criu pre-dump failed");
    write_file(dir + "/core-1.img", "x");
    (void)!::write(fd, "pages", 5);
  }
  void prepare_dump(const std::string&, const std::string&, int) override {
    calls.add("prepare dump");
  }
  void freeze() override { calls.add("freeze"); }
  void dump(const std::string& dir, const std::string& parent, int fd,
            ParentPages pages) override {
    parents.push_back(parent);
    final_pages = pages;
    calls.add("dump");
    if (fail_dump) throw Error("criu dump failed");
    write_file(dir + "/core-1.img", "x");
    if (dump_verbs)
      write_file(dir + "/" + rdma::kVerbsDumpFile,
                 R"({"contexts":1,"objects":{"pd":1,"mr":2,"cq":2,"srq":0,"qp":2},"mr_bytes":2097152,"dump_ms":3.5})");
    (void)!::write(fd, "pages", 5);
  }
  void resume() override { calls.add("thaw source"); }
  void destroy() override { calls.add("destroy source"); }
};

struct FakePageSink : PageSink {
  std::thread t;
  explicit FakePageSink(UniqueFd fd) {
    t = std::thread([fd = std::move(fd)] {
      char buf[4096];
      while (::read(fd.get(), buf, sizeof buf) > 0) {
      }
    });
  }
  void wait(std::chrono::milliseconds) override { t.join(); }
  ~FakePageSink() override {
    if (t.joinable()) t.join();
  }
};

// Nothing to prepare: the fake restore below does it all.
struct NothingPrepared : crx::migrate::PreparedRestore {
  int run(const std::string&, const std::function<void()>&, const std::function<void()>&) override {
    return 0;
  }
  // A verbs container's pinned pages must be in place before it resumes.
  void restore_pages_lazily() override { ADD_FAILURE() << "pages left for after the resume"; }
  void set_net_sysctls(const std::map<std::string, std::string>&) override {}
  void save_state_ahead() override {}
  std::string cgroup_path() const override { return {}; }
};

struct FakeDestination : DestinationSide {
  bool can_fill_after_resume() override { return true; }  // and yet (NothingPrepared)
  std::unique_ptr<crx::migrate::ReadyFill> prepare_fill(const std::string&,
                                                        const std::string&) override {
    ADD_FAILURE() << "a fill readied for verbs objects";
    return nullptr;
  }
  std::unique_ptr<crx::migrate::LazyPages> start_fill(const std::string&, const std::string&,
                                                      uint64_t,
                                                      std::unique_ptr<crx::migrate::ReadyFill>) override {
    ADD_FAILURE() << "a fill planned for verbs objects";
    return nullptr;
  }
  std::unique_ptr<crx::migrate::LazyPages> start_lazy_pages(const std::string&, const std::string&,
                                                            crx::UniqueFd) override {
    throw crx::Error("no post-copy here");
  }
  std::unique_ptr<crx::migrate::PreparedRestore> prepare_restore(const Manifest&,
                                                                 const Acceptance&,
                                                                 const std::string&,
                                                                 const std::string&) override {
    return std::make_unique<NothingPrepared>();
  }
  Calls& calls;
  bool fail_restore = false;
  explicit FakeDestination(Calls& c) : calls(c) {}
  Acceptance accept(const Manifest& m) override {
    calls.add("accept");
    return Acceptance{m.bundle, false};
  }
  std::unique_ptr<PageSink> start_page_server(const std::string&, UniqueFd ch, bool) override {
    return std::make_unique<FakePageSink>(std::move(ch));
  }
  int restore(crx::migrate::PreparedRestore&, const std::string& dir, const Manifest&,
              const std::function<void()>& hold, const std::function<void()>& resumed) override {
    calls.add("restore");
    if (fail_restore) throw Error("criu restore failed");
    write_file(dir + "/" + rdma::kVerbsRestoreFile,
               R"({"ok":true,"recreate_ms":7,"pin_ms":2,"resume_ms":0,"objects":{"pd":1,"mr":2,"cq":2,"srq":0,"qp":2}})");
    hold();
    calls.add("tasks run");
    if (resumed) {
      // As CRIU's post-resume: the restore goes on (its exit) while the
      // sender, told, destroys its copy.
      calls.add("destination runs the container");
      resumed();
      for (int i = 0; i < 500 && calls.count("destroy source") == 0; ++i)
        std::this_thread::sleep_for(10ms);
    }
    return 4242;
  }
  void discard(const Manifest&) noexcept override { calls.add("discard"); }
};

struct Harness {
  std::string root;
  SharedKey key = SharedKey::from_bytes("0123456789abcdef-test-key");
  Calls calls;
  FakeSource src{calls};
  FakeQps src_qps{calls, "source"};
  FakeDestination dst{calls};
  FakeQps dst_qps{calls, "destination"};
  test::FakeRdmaHost host;
  int pre_copy = 0;
  bool verbs_at_start = true;
  MigrationReport sender, receiver;

  Harness() {
    char tmpl[] = "/tmp/crx-verbs-proto-XXXXXX";
    root = ::mkdtemp(tmpl);
    host.load_patched({{"qpn_min", "8192"}, {"qpn_max", "0"}, {"mrn_min", "8192"}, {"mrn_max", "0"}});
    host.ports["rxe0"] = "4: ACTIVE";
    host.json["qp"] = R"([{"ifname":"rxe0","lqpn":1}])";
    host.json["mr"] = "[]";
  }
  ~Harness() { remove_tree(root); }

  void run() {
    TcpListener listener(parse_host_port("127.0.0.1:0"));
    ReceiverOptions ro;
    ro.wire = crx::test::protocol_test_wire();
    ro.key = &key;
    ro.image_root = root + "/dst";
    ro.timeout = 10s;
    ro.commit_timeout = 10s;
    ro.fill_after_resume = crx::migrate::FillAfterResume::Always;  // never for verbs objects
    VerbsDestination vdst(dst, host, dst_qps);
    auto rx = std::async(std::launch::async, [&] {
      std::string peer;
      auto fd = listener.accept(10s, &peer);
      return receive_one(listener, std::move(fd), peer, vdst, ro);
    });
    SenderOptions so;
    so.wire = crx::test::protocol_test_wire();
    so.to = parse_host_port("127.0.0.1:" + std::to_string(listener.port()));
    so.key = &key;
    so.manifest.id = "c1";
    so.manifest.bundle = "/bundles/c1";
    so.manifest.config_sha256 = "00";
    so.manifest.rdma.emplace();
    so.manifest.rdma->contexts = 1;
    so.manifest.rdma->devices = {"rxe0"};
    so.manifest.rdma->qpns = {0x1011, 0x1012};
    so.manifest.rdma->mrns = {0x1002};
    so.work_dir = root + "/src";
    so.pre_copy = PreCopyPolicy{pre_copy, 0};
    so.timeout = 10s;
    so.restore_timeout = 10s;
    VerbsSource vsrc(src, src_qps, "c1", verbs_at_start);
    sender = migrate_out(vsrc, so);
    receiver = rx.get();
  }
};

TEST(MigrateVerbs, CommitResumesDestinationQpsAfterCommitOnly) {
  Harness h;
  h.run();
  ASSERT_EQ(h.sender.outcome, "migrated") << h.sender.error;
  ASSERT_EQ(h.receiver.outcome, "migrated") << h.receiver.error;
  EXPECT_EQ(h.calls.count("destination resume QPs c1"), 1);
  EXPECT_EQ(h.calls.count("source resume QPs c1"), 0);  // never: the source is destroyed
  EXPECT_EQ(h.calls.count("destroy source"), 1);
  // The restored tasks ran (the commit had arrived) before the QPs resumed.
  EXPECT_LT(h.calls.index("tasks run"), h.calls.index("destination resume QPs c1"));
  // The container runs for its partners with its QPs: the sender hears of
  // it only then, not at the inner restore's resume.
  EXPECT_EQ(h.calls.count("destination runs the container"), 0);
  EXPECT_LT(h.calls.index("destination resume QPs c1"), h.calls.index("destroy source"));
  // Report: the sender has the plugin's dump, the receiver all three files.
  ASSERT_TRUE(h.sender.verbs && h.sender.verbs->dump);
  EXPECT_EQ(h.sender.verbs->dump->dump_ms, 3.5);
  ASSERT_TRUE(h.receiver.verbs && h.receiver.verbs->restore && h.receiver.verbs->resume);
  EXPECT_EQ(h.receiver.verbs->resume->qps, 2u);
  EXPECT_NE(h.receiver.to_text().find("verbs objects: 2 qp, 2 mr, 2 cq, 0 srq, 1 pd"),
            std::string::npos)
      << h.receiver.to_text();
  EXPECT_NE(h.receiver.to_json().find("\"recreate_ms\":7"), std::string::npos);
}

TEST(MigrateVerbs, SourceQpsStopRightAfterTheFreezeBeforeTheDump) {
  Harness h;
  h.run();
  ASSERT_EQ(h.sender.outcome, "migrated") << h.sender.error;
  EXPECT_EQ(h.calls.count("source stop QPs c1"), 1);
  EXPECT_LT(h.calls.index("freeze"), h.calls.index("source stop QPs c1"));
  EXPECT_LT(h.calls.index("source stop QPs c1"), h.calls.index("dump"));
  EXPECT_EQ(h.calls.count("destination stop QPs c1"), 0);
}

TEST(MigrateVerbs, QpsThatCannotStopRollBackAndResume) {
  Harness h;
  h.src_qps.fail_stop = true;
  h.run();
  EXPECT_EQ(h.sender.outcome, "rolled back");
  EXPECT_NE(h.sender.error.find("stop: Input/output error"), std::string::npos) << h.sender.error;
  EXPECT_EQ(h.calls.count("dump"), 0);
  EXPECT_EQ(h.calls.count("source resume QPs c1"), 1);  // the ones stopped so far
  EXPECT_EQ(h.calls.count("thaw source"), 1);
  EXPECT_LT(h.calls.index("source resume QPs c1"), h.calls.index("thaw source"));
}

TEST(MigrateVerbs, PreflightRefusalLeavesTheSourceUntouched) {
  Harness h;
  h.host.json["qp"] = R"([{"ifname":"rxe0","lqpn":4113}])";  // 0x1011 taken
  h.run();
  EXPECT_EQ(h.sender.outcome, "rolled back");
  EXPECT_NE(h.sender.error.find("QPN 4113 (rxe0)"), std::string::npos) << h.sender.error;
  EXPECT_EQ(h.calls.count("accept"), 0);
  EXPECT_EQ(h.calls.count("freeze"), 0);
  EXPECT_EQ(h.calls.count("source stop QPs c1"), 0);
  EXPECT_EQ(h.calls.count("dump"), 0);
  EXPECT_EQ(h.calls.count("thaw source"), 0);
}

TEST(MigrateVerbs, FailedRestoreResumesSourceQpsBeforeThaw) {
  Harness h;
  h.dst.fail_restore = true;
  h.run();
  EXPECT_EQ(h.sender.outcome, "rolled back");
  EXPECT_EQ(h.calls.count("source resume QPs c1"), 1);
  EXPECT_EQ(h.calls.count("thaw source"), 1);
  EXPECT_LT(h.calls.index("source resume QPs c1"), h.calls.index("thaw source"));
  EXPECT_EQ(h.calls.count("destination resume QPs c1"), 0);  // never talked
}

TEST(MigrateVerbs, FailedDumpResumesSourceQps) {
  Harness h;
  h.src.fail_dump = true;
  h.run();
  EXPECT_EQ(h.sender.outcome, "rolled back");
  EXPECT_EQ(h.calls.count("source resume QPs c1"), 1);
  EXPECT_EQ(h.calls.count("thaw source"), 1);
}

TEST(MigrateVerbs, SourceThawsEvenWhenItsQpsCannotResume) {
  Harness h;
  h.dst.fail_restore = true;
  h.src_qps.fail = true;
  h.run();
  EXPECT_EQ(h.sender.outcome, "rolled back");
  EXPECT_EQ(h.calls.count("thaw source"), 1);
  EXPECT_NE(h.sender.error.find("QPs stay stopped"), std::string::npos) << h.sender.error;
}

TEST(MigrateVerbs, PreDumpRoundsKeepSourceQpsRunning) {
  Harness h;
  h.pre_copy = 2;
  h.run();
  ASSERT_EQ(h.sender.outcome, "migrated") << h.sender.error;
  EXPECT_EQ(h.calls.count("pre-dump"), 2);
  EXPECT_EQ(h.calls.count("source resume QPs c1"), 2);  // once per pre-dump
}

// A pre-dump clears the soft-dirty bits of pinned huge pages, and the NIC
// never sets them: the final dump of a container with verbs objects keeps
// its parent but has the pages CRIU finds unchanged checked by content
// (ParentPages::Check; the page filter reads them, page_dedup.hpp).
TEST(MigrateVerbs, FinalDumpWithVerbsChecksItsParentsPages) {
  Harness h;
  h.pre_copy = 2;
  h.run();
  ASSERT_EQ(h.sender.outcome, "migrated") << h.sender.error;
  ASSERT_EQ(h.src.parents.size(), 3u);
  EXPECT_EQ(h.src.parents[1], "../1");
  EXPECT_EQ(h.src.parents[2], "../2");
  EXPECT_EQ(h.src.final_pages, ParentPages::Check);
}

// Verbs objects that appear only during pre-copy count as well (the
// pre-dump found QPs to resume).
TEST(MigrateVerbs, VerbsFirstSeenAtAPreDumpHaveTheParentCheckedToo) {
  Harness h;
  h.pre_copy = 1;
  h.verbs_at_start = false;
  h.run();
  ASSERT_EQ(h.sender.outcome, "migrated") << h.sender.error;
  ASSERT_EQ(h.src.parents.size(), 2u);
  EXPECT_EQ(h.src.parents[1], "../1");
  EXPECT_EQ(h.src.final_pages, ParentPages::Check);
}

// No verbs objects at any point: the final dump keeps its parent.
TEST(MigrateVerbs, WithoutVerbsTheFinalDumpKeepsItsParent) {
  Harness h;
  h.pre_copy = 1;
  h.verbs_at_start = false;
  h.src_qps.qps = 0;
  h.run();
  ASSERT_EQ(h.sender.outcome, "migrated") << h.sender.error;
  ASSERT_EQ(h.src.parents.size(), 2u);
  EXPECT_EQ(h.src.parents[1], "../1");
  EXPECT_EQ(h.src.final_pages, ParentPages::Trust);
}

// Final images without verbs objects: the container runs as soon as the
// inner restore resumes it; its QPs (none) are looked for after that.
TEST(MigrateVerbs, WithoutVerbsObjectsTheSenderHearsAtTheInnerResume) {
  Harness h;
  h.verbs_at_start = false;
  h.src.dump_verbs = false;
  h.src_qps.qps = 0;
  h.dst_qps.qps = 0;
  h.run();
  ASSERT_EQ(h.sender.outcome, "migrated") << h.sender.error;
  ASSERT_EQ(h.receiver.outcome, "migrated") << h.receiver.error;
  EXPECT_EQ(h.calls.count("destination runs the container"), 1);
  EXPECT_LT(h.calls.index("destroy source"), h.calls.index("destination resume QPs c1"));
}

}  // namespace
