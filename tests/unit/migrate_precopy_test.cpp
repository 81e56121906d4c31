// The pre-copy planner (fixed rounds and --pre-copy auto), its flag and
// config key, and the report's per-round numbers.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "../../cmd/cli.hpp"
#include "common/error.hpp"
#include "migrate/config.hpp"
#include "migrate/precopy.hpp"
#include "migrate/report.hpp"

namespace {

using namespace crx::migrate;

constexpr uint64_t MiB = 1024 * 1024;

TEST(MigratePreCopy, DisabledWhenMaxRoundsIsZero) {
  PreCopyPlanner p(PreCopyPolicy{0, 20});
  EXPECT_FALSE(p.want_another_round());
}

TEST(MigratePreCopy, StopsAtMaxRoundsWhileShrinking) {
  PreCopyPlanner p(PreCopyPolicy{3, 20});
  EXPECT_TRUE(p.want_another_round());
  p.record_round(100 * MiB);
  EXPECT_TRUE(p.want_another_round());
  p.record_round(50 * MiB);
  EXPECT_TRUE(p.want_another_round());
  p.record_round(10 * MiB);
  EXPECT_FALSE(p.want_another_round());
  EXPECT_EQ(p.stop_reason(), "max rounds (3) reached");
  EXPECT_EQ(p.rounds_done(), 3);
}

TEST(MigratePreCopy, StopsEarlyWhenTheDirtySetStopsShrinking) {
  PreCopyPlanner p(PreCopyPolicy{10, 20});
  p.record_round(64 * MiB);
  p.record_round(8 * MiB);
  EXPECT_TRUE(p.want_another_round());
  p.record_round(7 * MiB);  // 12.5% smaller: below 20%
  EXPECT_FALSE(p.want_another_round());
  EXPECT_EQ(p.stop_reason(), "dirty set stopped shrinking: 8.0 MiB -> 7.0 MiB (12% < 20%)");
}

TEST(MigratePreCopy, GrowingDirtySetStops) {
  PreCopyPlanner p(PreCopyPolicy{10, 0});
  p.record_round(8 * MiB);
  p.record_round(9 * MiB);
  EXPECT_FALSE(p.want_another_round());
}

TEST(MigratePreCopy, NothingDirtyStops) {
  PreCopyPlanner p(PreCopyPolicy{10, 20});
  p.record_round(8 * MiB);
  p.record_round(0);
  EXPECT_FALSE(p.want_another_round());
  EXPECT_EQ(p.stop_reason(), "nothing dirty");
}

TEST(MigratePreCopy, HumanBytes) {
  EXPECT_EQ(crx::migrate::human_bytes(812), "812 B");
  EXPECT_EQ(crx::migrate::human_bytes(3 * MiB / 2), "1.5 MiB");
}


// ---- --pre-copy auto: the planner on synthetic round series ----

constexpr double MiBd = 1024.0 * 1024.0;

PreCopyPolicy auto_policy(double fixed_downtime = 2.0) {
  PreCopyPolicy p;
  p.adaptive = true;
  p.fixed_downtime_seconds = fixed_downtime;
  return p;
}

// A container and a link as the rounds see them: round 1 moves all
// memory, each later round what the container dirtied (at most its
// working set) since the previous round's snapshot, which came one round
// time earlier; a round takes `fixed` plus its bytes at the round's
// bandwidth.
struct Workload {
  double total_mib = 64;
  double working_set_mib = 64;
  double dirty_mib_per_s = 1;
  double fixed = 0.5;
  std::vector<double> bw_mib_per_s{16};  // per round; the last one repeats
};

std::vector<RoundSample> run_rounds(PreCopyPlanner& p, const Workload& w) {
  std::vector<RoundSample> out;
  double prev_seconds = 0;
  for (int k = 0; p.want_another_round() && k < 20; ++k) {
    double bw = w.bw_mib_per_s[std::min<size_t>(k, w.bw_mib_per_s.size() - 1)];
    double mib = k == 0 ? w.total_mib : std::min(w.working_set_mib, w.dirty_mib_per_s * prev_seconds);
    RoundSample s{static_cast<uint64_t>(mib * MiBd), w.fixed + mib / bw, k == 0 ? 0 : prev_seconds};
    p.record_round(s);
    out.push_back(s);
    prev_seconds = s.seconds;
  }
  return out;
}

TEST(MigratePreCopyAuto, IdleContainerStopsOnceTheFinalRoundIsNegligible) {
  // 64 MiB touched once, then 64 KiB/s: round 2 measures the trickle and
  // the final round's memory is a rounding error beside the fixed work.
  PreCopyPlanner p(auto_policy());
  Workload w;
  w.dirty_mib_per_s = 1.0 / 16;
  run_rounds(p, w);
  EXPECT_EQ(p.rounds_done(), 2);
  EXPECT_EQ(p.stop_reason(),
            "predicted final round 33.1 KiB takes 0.00 s at 16.0 MiB/s, under 10% of the fixed "
            "downtime 3.28 s");
  const auto& e = p.estimates();
  // Learned from the two rounds: 0.5 s of fixed work per round, 16 MiB/s.
  EXPECT_NEAR(e[1].round_fixed, 0.5, 1e-6);
  EXPECT_NEAR(e[1].bandwidth / MiBd, 16, 1e-6);
  EXPECT_NEAR(e[1].dirty_rate / MiBd, 1.0 / 16, 1e-6);
  EXPECT_FALSE(e[0].predicted_final_bytes) << "no dirty rate after round 1";
  ASSERT_TRUE(e[1].predicted_downtime);
  EXPECT_NEAR(*e[1].predicted_downtime, 2.0 + 0.02 * 64, 0.01);
}

TEST(MigratePreCopyAuto, ConvergingDirtySetStopsWhenAnotherRoundCutsLittle) {
  // 12 MiB/s against 32 MiB/s with 1 s of fixed work a round: the rounds
  // shrink towards 12*1/(1-12/32) = 19.2 MiB and no further.
  PreCopyPlanner p(auto_policy());
  Workload w;
  w.dirty_mib_per_s = 12;
  w.fixed = 1.0;
  w.bw_mib_per_s = {32};
  auto rounds = run_rounds(p, w);
  EXPECT_EQ(p.rounds_done(), 3);
  EXPECT_EQ(p.stop_reason(),
            "converged: another round would cut the final round only from 21.6 MiB to 20.1 MiB "
            "(7% < 20%)");
  const auto& e = p.estimates();
  // Round 2 guessed the fixed part (0.5 s); round 3, a third of round 1's
  // size, let the planner learn it: 1 s, and the link's 32 MiB/s.
  EXPECT_DOUBLE_EQ(e[1].round_fixed, kRoundFixedSeconds);
  EXPECT_NEAR(e[2].round_fixed, 1.0, 1e-6);
  EXPECT_NEAR(e[2].bandwidth / MiBd, 32, 1e-6);
  EXPECT_NEAR(e[2].dirty_rate / MiBd, 12, 1e-6);
  // The prediction improved from round 2 to round 3.
  EXPECT_LT(*e[2].predicted_final_bytes, *e[1].predicted_final_bytes);
  EXPECT_LT(*e[2].predicted_downtime, *e[1].predicted_downtime);
}

TEST(MigratePreCopyAuto, ContainerRewritingAllItsMemoryCannotConverge) {
  // Every page dirty again by the next snapshot: round 2 is round 1 again.
  PreCopyPlanner p(auto_policy());
  p.record_round(RoundSample{64ull << 20, 4.5, 0});
  EXPECT_TRUE(p.want_another_round()) << "one round cannot measure a dirty rate";
  p.record_round(RoundSample{64ull << 20, 4.5, 4.5});
  EXPECT_FALSE(p.want_another_round());
  EXPECT_EQ(p.stop_reason(),
            "dirty rate 14.2 MiB/s >= 0.8x bandwidth 16.0 MiB/s: rounds cannot converge");
  // What it would have cost: all memory in the final round.
  EXPECT_EQ(*p.estimates()[1].predicted_final_bytes, 64ull << 20);
}

TEST(MigratePreCopyAuto, DirtySetThatStopsShrinkingStopsEvenBelowTheRateLimit) {
  // 60 of 64 MiB dirty again after 8 s: a dirty rate of 7.5 MiB/s looks
  // convergent, but the working set caps it; the rounds do not shrink.
  PreCopyPlanner p(auto_policy());
  p.record_round(RoundSample{64ull << 20, 4, 0});
  p.record_round(RoundSample{60ull << 20, 4, 8});
  EXPECT_FALSE(p.want_another_round());
  EXPECT_EQ(p.stop_reason(),
            "dirty set stopped shrinking: 64.0 MiB -> 60.0 MiB (6% < 20%); dirty rate 7.5 MiB/s, "
            "bandwidth 17.1 MiB/s");
  // The final round carries the working set again, not 7.5 MiB/s * 4 s.
  EXPECT_EQ(*p.estimates()[1].predicted_final_bytes, 60ull << 20);
}

TEST(MigratePreCopyAuto, BandwidthCollapseIsSeenInTheNextRound) {
  // 32 MiB/s in round 1, 2 MiB/s from round 2 on; 4 MiB/s dirty: fine on
  // the first link, hopeless on the second.
  PreCopyPlanner p(auto_policy());
  Workload w;
  w.dirty_mib_per_s = 4;
  w.bw_mib_per_s = {32, 2};
  run_rounds(p, w);
  EXPECT_EQ(p.rounds_done(), 2);
  EXPECT_EQ(p.stop_reason(),
            "dirty rate 4.0 MiB/s >= 0.8x bandwidth 2.0 MiB/s: rounds cannot converge");
  const auto& e = p.estimates();
  EXPECT_NEAR(e[0].bandwidth / MiBd, 32, 1e-6);
  EXPECT_NEAR(e[1].bandwidth / MiBd, 2, 1e-6);
  // 4 MiB/s for the 5.5 s of round 2: 22 MiB at 2 MiB/s in the downtime.
  EXPECT_EQ(*e[1].predicted_final_bytes, 22ull << 20);
  EXPECT_NEAR(*e[1].predicted_downtime, 11 + 3.28, 0.01);
  // The same workload on the fast link alone: 3.2 MiB left, negligible.
  PreCopyPlanner q(auto_policy());
  w.bw_mib_per_s = {32};
  run_rounds(q, w);
  EXPECT_EQ(q.stop_reason().rfind("predicted final round 3.2 MiB takes 0.10 s at 32.0 MiB/s", 0), 0u)
      << q.stop_reason();
  EXPECT_LT(*q.estimates()[1].predicted_downtime, 3.5);
}

TEST(MigratePreCopyAuto, TinyContainerNeedsOneRound) {
  // 1 MiB in 0.225 s: even all of it again in the final round is under a
  // tenth of the fixed work; no second round to measure a rate.
  PreCopyPlanner p(auto_policy());
  p.record_round(RoundSample{1ull << 20, 0.1 + 1.0 / 8, 0});
  EXPECT_FALSE(p.want_another_round());
  EXPECT_EQ(p.rounds_done(), 1);
  EXPECT_EQ(p.stop_reason().rfind("all memory (1.0 MiB) would take ", 0), 0u) << p.stop_reason();
  EXPECT_NE(p.stop_reason().find("no round can matter"), std::string::npos);
}

TEST(MigratePreCopyAuto, HardCapOfEightRounds) {
  // Halving every round with no fixed work and a tiny fixed downtime:
  // every next round promises half the final round, for ever.
  PreCopyPlanner p(auto_policy(0.001));
  double mib = 64, bw = 0.5, prev = 0;
  while (p.want_another_round() && p.rounds_done() < 20) {
    double t = mib / bw;
    p.record_round(RoundSample{static_cast<uint64_t>(mib * MiBd), t, prev});
    prev = t;
    mib /= 2;
  }
  EXPECT_EQ(p.rounds_done(), kAutoMaxRounds);
  EXPECT_EQ(p.stop_reason(), "max rounds (8) reached");
}

TEST(MigratePreCopyAuto, NothingDirty) {
  PreCopyPlanner p(auto_policy());
  p.record_round(RoundSample{64ull << 20, 4, 0});
  p.record_round(RoundSample{0, 0.5, 4});
  EXPECT_EQ(p.stop_reason(), "nothing dirty");
}

TEST(MigratePreCopy, FixedRoundsAreMeasuredAndPredictedToo) {
  // --pre-copy N keeps its rules; the report still gets the numbers.
  PreCopyPlanner p(PreCopyPolicy{2, 20});
  p.record_round(RoundSample{64ull << 20, 4.5, 0});
  p.record_round(RoundSample{1ull << 20, 0.5625, 4.5});
  EXPECT_EQ(p.stop_reason(), "max rounds (2) reached");
  ASSERT_TRUE(p.estimates()[1].predicted_final_bytes);
  EXPECT_GT(p.estimates()[1].dirty_rate, 0);
}

// ---- the flag and the config file ----

TEST(MigratePreCopyFlag, NumbersAndAuto) {
  PreCopyPolicy p;
  apply_pre_copy_arg(p, "auto");
  EXPECT_TRUE(p.adaptive);
  apply_pre_copy_arg(p, "3");
  EXPECT_FALSE(p.adaptive);
  EXPECT_EQ(p.max_rounds, 3);
  apply_pre_copy_arg(p, "0");
  EXPECT_EQ(p.max_rounds, 0);
  EXPECT_FALSE(PreCopyPlanner(p).want_another_round()) << "--pre-copy 0: no round";
  apply_pre_copy_arg(p, "64");
  EXPECT_EQ(p.max_rounds, 64);
}

TEST(MigratePreCopyFlag, BadValuesAreOneLineNamingTheFlag) {
  for (const char* bad : {"autox", "-1", "65", "", "3.5", " 3", "AUTO", "1000"}) {
    PreCopyPolicy p;
    try {
      apply_pre_copy_arg(p, bad);
      ADD_FAILURE() << "accepted: " << bad;
    } catch (const crx::Error& e) {
      std::string m = e.what();
      EXPECT_EQ(m, std::string("--pre-copy: expected a number of rounds 0..64 or \"auto\", got \"") +
                       bad + "\"");
      EXPECT_EQ(m.find('\n'), std::string::npos);
    }
  }
}

// The command line as crx-migrate parses it.
std::string parse_error(std::vector<std::string> argv) {
  crx::cmd::Cli cli;
  crx::cmd::add_global_options(cli, {});
  crx::cmd::register_commands(cli, {});
  std::vector<std::string> reversed(argv.rbegin(), argv.rend());
  try {
    cli.app.parse(reversed);
  } catch (const CLI::ParseError& e) {
    return e.what();
  }
  return "";
}

TEST(MigratePreCopyFlag, TheCommandLineRefusesBadValuesBeforeAnythingRuns) {
  const std::vector<std::string> base{"migrate", "c1", "--to", "10.0.0.2:7070"};
  auto with = [&](std::vector<std::string> more) {
    auto v = base;
    v.insert(v.end(), more.begin(), more.end());
    return parse_error(v);
  };
  EXPECT_EQ(with({"--pre-copy", "auto"}), "");
  EXPECT_EQ(with({"--pre-copy", "2"}), "");
  EXPECT_EQ(with({"--pre-copy=0"}), "");
  const std::string why = "expected a number of rounds 0..64 or \"auto\", got ";
  EXPECT_EQ(with({"--pre-copy", "autox"}), "--pre-copy: " + why + "\"autox\"");
  EXPECT_EQ(with({"--pre-copy", "-1"}), "--pre-copy: " + why + "\"-1\"");
  EXPECT_EQ(with({"--pre-copy=-2"}), "--pre-copy: " + why + "\"-2\"");
  EXPECT_NE(with({"--min-shrink", "-5"}).find("--min-shrink"), std::string::npos);
  EXPECT_EQ(with({"--pre-dump-mode", "read"}), "");
  EXPECT_EQ(with({"--pre-dump-mode=splice"}), "");
  EXPECT_EQ(with({"--pre-dump-mode", "vm_read"}),
            "--pre-dump-mode: expected \"read\" or \"splice\", got \"vm_read\"");
}

TEST(MigratePreCopyFlag, ConfigFileTakesAutoAndTheFixedDowntime) {
  auto c = crx::migrate::parse_migrate_config(
      "migration:\n  pre_copy:\n    max_rounds: auto\n    fixed_downtime_seconds: 1.5\n", "x");
  EXPECT_TRUE(c.pre_copy.adaptive);
  EXPECT_DOUBLE_EQ(c.pre_copy.fixed_downtime_seconds, 1.5);
  EXPECT_FALSE(crx::migrate::parse_migrate_config("", "x").pre_copy.adaptive) << "default unchanged";
  EXPECT_THROW(crx::migrate::parse_migrate_config(
                   "migration:\n  pre_copy:\n    fixed_downtime_seconds: 0\n", "x"),
               crx::Error);
}

// ---- the report ----

MigrationReport auto_report() {
  MigrationReport r;
  r.role = "sender";
  r.id = "c1";
  r.peer = "10.0.0.2:7070";
  r.outcome = "migrated";
  r.pre_copy_mode = "auto";
  r.pre_copy_stop = "dirty rate 40.0 MiB/s >= 0.8x bandwidth 45.0 MiB/s: rounds cannot converge";
  r.fixed_downtime_estimate = 3.28;
  RoundReport r1{1, false, 64ull << 20, 100 << 10, 4.0};
  r1.throughput = 16 * MiBd;
  r1.bandwidth = 16 * MiBd;
  RoundReport r2{2, false, 2ull << 20, 100 << 10, 1.0};
  r2.throughput = 2 * MiBd;
  r2.bandwidth = 16 * MiBd;
  r2.dirty_rate = 0.5 * MiBd;
  r2.predicted_final_bytes = 512 << 10;
  r2.predicted_downtime = 3.31;
  RoundReport r3{3, true, 600 << 10, 200 << 10, 2.5};
  r3.throughput = 240 * 1024;
  r3.dirty_rate = 0.6 * MiBd;
  r.rounds = {r1, r2, r3};
  r.downtime_seconds = 3.5;
  r.total_seconds = 9;
  return r;
}

TEST(MigratePreCopyReport, TextShowsRatesPredictionAndActual) {
  std::string t = auto_report().to_text();
  EXPECT_NE(t.find("  round 1 (pre-copy): memory 64.0 MiB, images 100.0 KiB, 4.000 s, 16.0 MiB/s; "
                   "link 16.0 MiB/s\n"),
            std::string::npos) << t;
  EXPECT_NE(t.find("  round 2 (pre-copy): memory 2.0 MiB, images 100.0 KiB, 1.000 s, 2.0 MiB/s; "
                   "dirty 512.0 KiB/s, link 16.0 MiB/s, predicted final 512.0 KiB, downtime 3.31 s\n"),
            std::string::npos) << t;
  EXPECT_NE(t.find("  round 3 (final dump): memory 600.0 KiB, images 200.0 KiB, 2.500 s, 240.0 KiB/s; "
                   "dirty 614.4 KiB/s\n"),
            std::string::npos) << t;
  EXPECT_NE(t.find("  pre-copy stopped (auto): dirty rate 40.0 MiB/s >= 0.8x bandwidth 45.0 MiB/s: "
                   "rounds cannot converge\n"),
            std::string::npos) << t;
  EXPECT_NE(t.find("  prediction: final round 512.0 KiB, downtime 3.31 s; actual 600.0 KiB, 3.50 s\n"),
            std::string::npos) << t;
}

TEST(MigratePreCopyReport, JsonHasTheRoundsNumbersAndThePreCopySummary) {
  auto j = nlohmann::json::parse(auto_report().to_json());
  const auto& r2 = j["rounds"][1];
  EXPECT_EQ(r2["page_bytes"], 2ull << 20);
  EXPECT_DOUBLE_EQ(r2["bytes_per_second"].get<double>(), 2 * MiBd);
  EXPECT_DOUBLE_EQ(r2["bandwidth_bytes_per_second"].get<double>(), 16 * MiBd);
  EXPECT_DOUBLE_EQ(r2["dirty_bytes_per_second"].get<double>(), 0.5 * MiBd);
  EXPECT_EQ(r2["predicted_final_bytes"], 512 << 10);
  EXPECT_DOUBLE_EQ(r2["predicted_downtime_seconds"].get<double>(), 3.31);
  EXPECT_FALSE(j["rounds"][0].contains("predicted_final_bytes"));
  const auto& p = j["pre_copy"];
  EXPECT_EQ(p["mode"], "auto");
  EXPECT_EQ(p["rounds"], 2);
  EXPECT_EQ(p["stop"], j["pre_copy_stop"]);
  EXPECT_EQ(p["predicted_final_bytes"], 512 << 10);
  EXPECT_EQ(p["actual_final_bytes"], 600 << 10);
  EXPECT_DOUBLE_EQ(p["predicted_downtime_seconds"].get<double>(), 3.31);
  EXPECT_DOUBLE_EQ(p["actual_downtime_seconds"].get<double>(), 3.5);
  EXPECT_DOUBLE_EQ(p["fixed_downtime_seconds"].get<double>(), 3.28);
}

TEST(MigratePreCopyReport, NoPreCopyNoSummaryAndARollbackHasNoActual) {
  MigrationReport r = auto_report();
  r.outcome = "rolled back";
  EXPECT_EQ(r.to_text().find("; actual"), std::string::npos);
  EXPECT_FALSE(nlohmann::json::parse(r.to_json())["pre_copy"].contains("actual_downtime_seconds"));
  MigrationReport none;
  none.outcome = "migrated";
  none.rounds = {RoundReport{1, true, 1 << 20, 1 << 10, 1.0}};
  EXPECT_FALSE(nlohmann::json::parse(none.to_json()).contains("pre_copy"));
  EXPECT_EQ(none.to_text().find("prediction"), std::string::npos);
}

}  // namespace
