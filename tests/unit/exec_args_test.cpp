// Pure parts of exec/ps/update/events: the exec process built from runc's
// flags, ps output filtering, memory sizes and Go durations.
#include <gtest/gtest.h>

#include "common/error.hpp"
#include "container/events.hpp"
#include "container/exec_process.hpp"
#include "container/ps.hpp"
#include "container/update.hpp"

namespace crx::container {
namespace {

using nlohmann::json;

json config() {
  return {{"process",
           {{"terminal", true},
            {"consoleSize", {{"height", 10}, {"width", 20}}},
            {"user", {{"uid", 5}, {"gid", 6}}},
            {"args", {"sh"}},
            {"env", {"PATH=/bin", "A=1"}},
            {"cwd", "/home"},
            {"capabilities", {{"bounding", {"CAP_KILL"}}, {"effective", {"CAP_KILL"}}}}}}};
}

TEST(ExecProcess, FlagsOverrideTheContainersProcessLikeRunc) {
  ExecOverrides o;
  o.args = {"ls", "-l"};
  o.env = {"B=2"};
  o.cwd = "/tmp";
  o.user = "1000:1001";
  o.additional_gids = {7, 8};
  o.caps = {"CAP_NET_ADMIN", "SYS_TIME", "CAP_KILL"};
  o.no_new_privs = true;
  auto p = exec_process_json(config(), o);
  EXPECT_EQ(p["args"], json({"ls", "-l"}));
  EXPECT_EQ(p["terminal"], false);
  EXPECT_FALSE(p.contains("consoleSize"));
  EXPECT_EQ(p["env"], json({"PATH=/bin", "A=1", "B=2"}));
  EXPECT_EQ(p["cwd"], "/tmp");
  EXPECT_EQ(p["user"]["uid"], 1000);
  EXPECT_EQ(p["user"]["gid"], 1001);
  EXPECT_EQ(p["user"]["additionalGids"], json({7, 8}));
  EXPECT_EQ(p["capabilities"]["bounding"], json({"CAP_KILL", "CAP_NET_ADMIN", "CAP_SYS_TIME"}));
  EXPECT_EQ(p["capabilities"]["ambient"], json({"CAP_NET_ADMIN", "CAP_SYS_TIME", "CAP_KILL"}));
  EXPECT_EQ(p["noNewPrivileges"], true);
}

TEST(ExecProcess, DefaultsKeepTheContainersValues) {
  ExecOverrides o;
  o.args = {"true"};
  o.tty = true;
  auto p = exec_process_json(config(), o);
  EXPECT_EQ(p["cwd"], "/home");
  EXPECT_EQ(p["user"]["uid"], 5);
  EXPECT_EQ(p["terminal"], true);
  EXPECT_EQ(p["consoleSize"]["width"], 20);
  o.user = "42";
  EXPECT_EQ(exec_process_json(config(), o)["user"]["gid"], 0);
}

TEST(ExecProcess, RejectsNamesAndEmptyArgs) {
  ExecOverrides o;
  o.args = {"true"};
  o.user = "root";
  EXPECT_THROW(exec_process_json(config(), o), Error);
  o.user = "";
  o.args.clear();
  EXPECT_THROW(exec_process(config(), o), Error);
}

TEST(PsFilter, KeepsHeaderAndTheContainersPids) {
  std::string ps =
      "UID          PID    PPID  C STIME TTY          TIME CMD\n"
      "root           1       0  0 06:00 ?        00:00:01 /sbin/init\n"
      "root         120       1  0 06:00 ?        00:00:00 sleep 1000\n"
      "root        1200       1  0 06:00 ?        00:00:00 sleep 120\n";
  EXPECT_EQ(filter_ps_output(ps, {120}),
            "UID          PID    PPID  C STIME TTY          TIME CMD\n"
            "root         120       1  0 06:00 ?        00:00:00 sleep 1000\n");
  EXPECT_THROW(filter_ps_output("UID CMD\nroot x\n", {1}), Error);
}

TEST(UpdateArgs, MemorySizesAsDockerParsesThem) {
  EXPECT_EQ(parse_memory_size("1048576"), 1048576);
  EXPECT_EQ(parse_memory_size("512m"), 512LL << 20);
  EXPECT_EQ(parse_memory_size("1G"), 1LL << 30);
  EXPECT_EQ(parse_memory_size("2kb"), 2048);
  EXPECT_EQ(parse_memory_size("1.5k"), 1536);
  EXPECT_EQ(parse_memory_size("-1"), -1);
  EXPECT_THROW(parse_memory_size("lots"), Error);
  EXPECT_THROW(parse_memory_size("12q"), Error);
}

TEST(UpdateArgs, FlagsBecomeLinuxResources) {
  UpdateFlags f;
  f.memory = "64m";
  f.pids_limit = 10;
  f.cpu_quota = 5000;
  f.cpuset_cpus = "0";
  f.blkio_weight = 300;
  auto r = resources_json_from_flags(f);
  EXPECT_EQ(r, json({{"memory", {{"limit", 64 << 20}}},
                     {"pids", {{"limit", 10}}},
                     {"cpu", {{"quota", 5000}, {"cpus", "0"}}},
                     {"blockIO", {{"weight", 300}}}}));
  EXPECT_EQ(resources_json_from_flags({}), json::object());
}

TEST(EventsArgs, GoDurations) {
  using std::chrono::milliseconds;
  EXPECT_EQ(parse_duration("5s"), milliseconds(5000));
  EXPECT_EQ(parse_duration("100ms"), milliseconds(100));
  EXPECT_EQ(parse_duration("1m30s"), milliseconds(90000));
  EXPECT_EQ(parse_duration("1.5s"), milliseconds(1500));
  EXPECT_THROW(parse_duration("5"), Error);
  EXPECT_THROW(parse_duration("0s"), Error);
  EXPECT_THROW(parse_duration("abc"), Error);
}

}  // namespace
}  // namespace crx::container
