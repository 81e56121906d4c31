#include <gtest/gtest.h>

#include <string>

#include "common/error.hpp"
#include "migrate/config.hpp"

namespace {

using crx::migrate::parse_migrate_config;

std::string error_of(const std::string& yaml) {
  try {
    parse_migrate_config(yaml, "/etc/crx/config.yaml");
  } catch (const crx::Error& e) {
    return e.what();
  }
  return "no error";
}

TEST(MigrateConfig, EmptyFileOrOtherSectionsGiveDefaults) {
  auto c = parse_migrate_config("", "x");
  EXPECT_EQ(c.listen, "0.0.0.0:7070");
  EXPECT_EQ(c.key_file, "/etc/crx/migrate.key");
  EXPECT_EQ(c.pre_copy.max_rounds, 0);
  EXPECT_FALSE(c.insecure_plaintext) << "TLS unless asked otherwise";
  auto d = parse_migrate_config("runtime:\n  root: /run/crx\n", "x");
  EXPECT_EQ(d.image_dir, "/run/crx/migrate");
}

TEST(MigrateConfig, ReadsEveryKey) {
  auto c = parse_migrate_config(R"(
migration:
  listen: 10.0.0.2:7100
  key_file: /etc/crx/k
  image_dir: /dev/shm/crx
  timeout_seconds: 90
  pre_copy:
    max_rounds: 4
    min_shrink_percent: 35.5
)", "x");
  EXPECT_EQ(c.listen, "10.0.0.2:7100");
  EXPECT_EQ(c.key_file, "/etc/crx/k");
  EXPECT_EQ(c.image_dir, "/dev/shm/crx");
  EXPECT_EQ(c.timeout_seconds, 90);
  EXPECT_EQ(c.pre_copy.max_rounds, 4);
  EXPECT_DOUBLE_EQ(c.pre_copy.min_shrink_percent, 35.5);
}

TEST(MigrateConfig, InsecurePlaintextIsABoolean) {
  EXPECT_TRUE(parse_migrate_config("migration:\n  insecure_plaintext: true\n", "x").insecure_plaintext);
  EXPECT_FALSE(parse_migrate_config("migration:\n  insecure_plaintext: false\n", "x").insecure_plaintext);
  EXPECT_EQ(error_of("migration:\n  insecure_plaintext: maybe\n"),
            "/etc/crx/config.yaml: migration.insecure_plaintext has the wrong type");
}

TEST(MigrateConfig, UnknownKeysAreNamed) {
  EXPECT_EQ(error_of("migration:\n  listn: 1.2.3.4:5\n"),
            "/etc/crx/config.yaml: unknown key migration.listn");
  EXPECT_EQ(error_of("migration:\n  pre_copy:\n    rounds: 3\n"),
            "/etc/crx/config.yaml: unknown key migration.pre_copy.rounds");
}

TEST(MigrateConfig, BadValuesAreNamed) {
  EXPECT_NE(error_of("migration:\n  pre_copy:\n    max_rounds: many\n").find("pre_copy.max_rounds has the wrong type"),
            std::string::npos);
  EXPECT_NE(error_of("migration:\n  pre_copy:\n    min_shrink_percent: 150\n").find("0..100"),
            std::string::npos);
  EXPECT_NE(error_of("migration:\n  image_dir: relative/dir\n").find("absolute"), std::string::npos);
  EXPECT_NE(error_of("migration: [1, 2\n").find("invalid YAML"), std::string::npos);
}

TEST(MigrateConfig, MissingFileIsFineUnlessRequired) {
  EXPECT_EQ(crx::migrate::load_migrate_config("/nonexistent/crx.yaml").listen, "0.0.0.0:7070");
  EXPECT_THROW(crx::migrate::load_migrate_config("/nonexistent/crx.yaml", true), crx::Error);
}

}  // namespace
