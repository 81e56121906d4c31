// migrate/stale_sessions: what the next `crx receive` removes after a
// receiver died mid-migration, and what it must keep.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include <nlohmann/json.hpp>

#include "common/fs.hpp"
#include "migrate/stale_sessions.hpp"
#include "../support/temp_dir.hpp"

namespace {

using crx::migrate::sweep_stale_sessions;
using crx::migrate::write_session_marker;

class StaleSessions : public ::testing::Test {
 protected:
  void SetUp() override {
    images = base + "/images";
    g.root = base + "/state";
    ASSERT_EQ(::mkdir(images.c_str(), 0700), 0);
    ASSERT_EQ(::mkdir(g.root.c_str(), 0711), 0);
  }

  // A session of a receiver that is gone: this pid with another start time.
  std::string dead_session(const std::string& id, bool committed, const std::string& began) {
    std::string dir = images + "/" + id + "-0123abcd";
    EXPECT_EQ(::mkdir(dir.c_str(), 0700), 0);
    nlohmann::json j = {{"pid", ::getpid()}, {"start", 1}, {"id", id},
                        {"began", began}, {"committed", committed}};
    crx::write_file_atomic(dir + "/receiver.json", j.dump());
    return dir;
  }
  std::string container(const std::string& id, const std::string& created) {
    std::string dir = g.root + "/" + id;
    EXPECT_EQ(::mkdir(dir.c_str(), 0711), 0);
    if (!created.empty()) {
      crx::write_file_atomic(dir + "/state.json", nlohmann::json{{"id", id}, {"created", created}}.dump());
    }
    return dir;
  }

  crx::test::TempDir tmp{"crx-stale"};
  std::string base = tmp.path(), images;
  crx::container::GlobalOptions g;
};

TEST_F(StaleSessions, HalfRestoredContainerAndImagesOfADeadReceiverGo) {
  std::string s = dead_session("c1", false, "2026-11-24T09:00:00.000000000Z");
  std::string c = container("c1", "");  // killed before state.json
  crx::write_file_atomic(c + "/criu-leftover", "x");
  auto lines = sweep_stale_sessions(images, g);
  EXPECT_FALSE(crx::path_exists(s));
  EXPECT_FALSE(crx::path_exists(c));
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_NE(lines[0].find("deleted c1"), std::string::npos) << lines[0];
}

TEST_F(StaleSessions, ALiveReceiversSessionStays) {
  std::string dir = images + "/c2-0123abcd";
  ASSERT_EQ(::mkdir(dir.c_str(), 0700), 0);
  write_session_marker(dir, "c2", false, "2026-11-24T09:00:00.000000000Z");
  std::string c = container("c2", "");
  EXPECT_TRUE(sweep_stale_sessions(images, g).empty());
  EXPECT_TRUE(crx::path_exists(dir + "/receiver.json"));
  EXPECT_TRUE(crx::path_exists(c));
}

TEST_F(StaleSessions, CommittedOrOlderContainersStay) {
  std::string s3 = dead_session("c3", true, "2026-11-24T09:00:00.000000000Z");
  std::string c3 = container("c3", "2026-11-24T09:00:05.000000000Z");
  std::string s4 = dead_session("c4", false, "2026-11-24T09:00:00.000000000Z");
  std::string c4 = container("c4", "2026-11-24T08:00:00.000000000Z");  // was there before
  auto lines = sweep_stale_sessions(images, g);
  EXPECT_EQ(lines.size(), 2u);
  EXPECT_FALSE(crx::path_exists(s3));
  EXPECT_FALSE(crx::path_exists(s4));
  EXPECT_TRUE(crx::path_exists(c3 + "/state.json"));
  EXPECT_TRUE(crx::path_exists(c4 + "/state.json"));
}

TEST_F(StaleSessions, DirectoriesWithoutAMarkerAreNotTouched) {
  std::string out = images + "/out-c5-abcd";  // a sender's
  ASSERT_EQ(::mkdir(out.c_str(), 0700), 0);
  EXPECT_TRUE(sweep_stale_sessions(images, g).empty());
  EXPECT_TRUE(crx::path_exists(out));
}

}  // namespace
