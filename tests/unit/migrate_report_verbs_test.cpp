// The verbs part of the migration report, from the plugin's JSON files.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <nlohmann/json.hpp>

#include "common/fs.hpp"
#include "migrate/report.hpp"
#include "rdma/plugin_stats.hpp"
#include "rdma/rdma_error.hpp"

namespace {

using namespace crx;

struct TempDir {
  std::string path;
  TempDir() {
    char tmpl[] = "/tmp/crx-verbs-report-XXXXXX";
    path = ::mkdtemp(tmpl);
  }
  ~TempDir() { remove_tree(path); }
};

TEST(VerbsStats, ParsesPluginFiles) {
  auto d = rdma::parse_verbs_dump_stats(
      R"({"contexts":2,"objects":{"pd":1,"mr":3,"cq":2,"srq":0,"qp":4},"mr_bytes":1048576,)"
      R"("receives_in_progress":3,"responder_resources":6,"completions":5,"image_bytes":4096,)"
      R"("dump_ms":12.5})");
  ASSERT_TRUE(d);
  EXPECT_EQ(d->contexts, 2u);
  EXPECT_EQ(d->objects.at("qp"), 4u);
  EXPECT_EQ(d->mr_bytes, 1048576u);
  EXPECT_EQ(d->receives_in_progress, 3u);
  EXPECT_EQ(d->responder_resources, 6u);
  EXPECT_EQ(d->completions, 5u);
  EXPECT_EQ(d->image_bytes, 4096u);
  auto r = rdma::parse_verbs_restore_stats(R"({"ok":false,"error":"EBUSY: QPN 17\ntaken"})");
  ASSERT_TRUE(r);
  EXPECT_FALSE(r->ok);
  EXPECT_EQ(r->error, "EBUSY: QPN 17 taken");  // one line
  EXPECT_FALSE(rdma::parse_verbs_restore_stats(R"({"error":"x"})")->ok);  // no "ok": not ok
  EXPECT_FALSE(rdma::parse_verbs_dump_stats("[1]"));
}

TEST(VerbsStats, RestoreCheckFailsOnOkFalseOnly) {
  TempDir t;
  EXPECT_NO_THROW(rdma::check_verbs_restore(t.path));  // no plugin, no file
  write_file(t.path + "/crx-verbs-restore.json", R"({"ok":true})");
  EXPECT_NO_THROW(rdma::check_verbs_restore(t.path));
  write_file(t.path + "/crx-verbs-restore.json", R"({"ok":false,"error":"pin MR 3: EFAULT"})");
  try {
    rdma::check_verbs_restore(t.path);
    FAIL();
  } catch (const rdma::RdmaError& e) {
    EXPECT_EQ(e.cause(), rdma::RdmaCause::PluginRestore);
    EXPECT_STREQ(e.what(), "restoring the verbs objects failed: pin MR 3: EFAULT");
  }
  write_file(t.path + "/crx-verbs-restore.json", "{trunc");
  EXPECT_THROW(rdma::check_verbs_restore(t.path), rdma::RdmaError);
}

TEST(VerbsReport, TextAndJson) {
  TempDir t;
  EXPECT_FALSE(migrate::VerbsReport::read(t.path));
  write_file(t.path + "/crx-verbs-dump.json",
             R"({"contexts":1,"objects":{"pd":1,"mr":2,"cq":2,"srq":0,"qp":2},"mr_bytes":2097152,"dump_ms":3.5})");
  write_file(t.path + "/crx-verbs-restore.json",
             R"({"ok":true,"recreate_ms":7.25,"pin_ms":2,"resume_ms":0,"objects":{"pd":1,"mr":2,"cq":2,"srq":0,"qp":2},)"
             R"("init_ms":1.5,"providers_preloaded":true,)"
             R"("recreate_parts_ms":{"open":1,"create":4,"refill":2,"map":0.25}})");
  rdma::write_verbs_resume_stats(t.path, {2, 1.5});
  migrate::MigrationReport rep;
  rep.role = "receiver";
  rep.id = "c1";
  rep.outcome = "migrated";
  rep.verbs = migrate::VerbsReport::read(t.path);
  std::string text = rep.to_text();
  EXPECT_NE(text.find("  verbs objects: 2 qp, 2 mr, 2 cq, 0 srq, 1 pd in 1 context, MRs 2.0 MiB\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("  verbs time: dump 3.5 ms, plugin init 1.5 ms (providers loaded ahead), "
                      "recreate 7.2 ms, pin MRs 2.0 ms, resume 1.5 ms (after the commit)\n"),
            std::string::npos)
      << text;
  auto j = nlohmann::json::parse(rep.to_json());
  EXPECT_EQ(j["verbs"]["objects"]["qp"], 2);
  EXPECT_EQ(j["verbs"]["dump_ms"], 3.5);
  EXPECT_EQ(j["verbs"]["pin_ms"], 2.0);
  EXPECT_EQ(j["verbs"]["resume_ms"], 1.5);
  EXPECT_EQ(j["verbs"]["restore_ok"], true);
  EXPECT_EQ(j["verbs"]["resumed_qps_after_commit"], 2);
  EXPECT_EQ(j["verbs"]["plugin_init_ms"], 1.5);
  EXPECT_EQ(j["verbs"]["providers_preloaded"], true);
  EXPECT_EQ(j["verbs"]["recreate_parts_ms"]["create"], 4.0);
  EXPECT_EQ(j["verbs"]["recreate_parts_ms"]["map"], 0.25);

  // a restore without the preload (crx restore) says nothing of it
  write_file(t.path + "/crx-verbs-restore.json",
             R"({"ok":true,"recreate_ms":7.25,"pin_ms":2,"init_ms":80})");
  rep.verbs = migrate::VerbsReport::read(t.path);
  EXPECT_NE(rep.to_text().find("plugin init 80.0 ms, recreate"), std::string::npos) << rep.to_text();
  EXPECT_EQ(nlohmann::json::parse(rep.to_json())["verbs"]["providers_preloaded"], false);
  EXPECT_FALSE(nlohmann::json::parse(rep.to_json())["verbs"].contains("recreate_parts_ms"));

  rep.verbs.reset();
  EXPECT_EQ(rep.to_text().find("verbs"), std::string::npos);
  EXPECT_FALSE(nlohmann::json::parse(rep.to_json()).contains("verbs"));
}

// A receive caught in the middle of a message is named: it is the case a
// restore must continue where it stood (rxe-patches 0007/0010). So are the
// READs a responder had accepted (a partner's retry of one must be
// answered) and completions waiting in a CQ (the image carries them:
// cq_window.hpp).
TEST(VerbsReport, NamesReceivesInProgressHeldReadsAndQueuedCompletions) {
  TempDir t;
  write_file(t.path + "/crx-verbs-dump.json",
             R"({"contexts":1,"objects":{"qp":1},"mr_bytes":0,"receives_in_progress":1,)"
             R"("responder_resources":2,"completions":3,"image_bytes":2048})");
  migrate::MigrationReport rep;
  rep.verbs = migrate::VerbsReport::read(t.path);
  EXPECT_NE(rep.to_text().find("MRs 0 B, image 2.0 KiB, 1 receive in progress, 2 READs/atomics "
                               "held for retries, 3 completions queued\n"),
            std::string::npos)
      << rep.to_text();
  auto j = nlohmann::json::parse(rep.to_json());
  EXPECT_EQ(j["verbs"]["receives_in_progress"], 1);
  EXPECT_EQ(j["verbs"]["responder_resources"], 2);
  EXPECT_EQ(j["verbs"]["completions_queued"], 3);
  EXPECT_EQ(j["verbs"]["image_bytes"], 2048);
}

}  // namespace
