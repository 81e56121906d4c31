#include <gtest/gtest.h>

#include <string>

#include "common/error.hpp"
#include "container/create.hpp"
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
  EXPECT_EQ(d.image_dir, "/run/crx-migrate");
}

// The RAM dir must not lie in crx's state root: a dir there is taken for a
// container's state dir, and `crx create migrate` failed with "already
// exists" on every host that had sent or received a migration (found by
// the migration soak, tests/soak).
TEST(MigrateConfig, DefaultImageDirIsOutsideTheDefaultStateRoot) {
  const std::string root = crx::container::GlobalOptions{}.root + "/";
  const std::string dir = crx::migrate::MigrateConfig{}.image_dir;
  EXPECT_NE(dir.rfind(root, 0), 0u) << dir << " is under " << root;
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

TEST(MigrateConfig, PrepareRestoreIsOnUnlessSwitchedOff) {
  EXPECT_TRUE(parse_migrate_config("", "x").prepare_restore);
  EXPECT_FALSE(parse_migrate_config("migration:\n  prepare_restore: false\n", "x").prepare_restore);
  EXPECT_NE(error_of("migration:\n  prepare_restore: later\n").find("migration.prepare_restore"),
            std::string::npos);
}

TEST(MigrateConfig, FillAfterResumeIsAutoUnlessSaid) {
  using crx::migrate::FillAfterResume;
  EXPECT_EQ(parse_migrate_config("", "x").fill_after_resume, FillAfterResume::Auto);
  EXPECT_EQ(parse_migrate_config("migration:\n  fill_after_resume: never\n", "x").fill_after_resume,
            FillAfterResume::Never);
  EXPECT_EQ(parse_migrate_config("migration:\n  fill_after_resume: always\n", "x").fill_after_resume,
            FillAfterResume::Always);
  EXPECT_EQ(error_of("migration:\n  fill_after_resume: later\n"),
            "/etc/crx/config.yaml: migration.fill_after_resume must be auto, always or never, not "
            "\"later\"");
}

TEST(MigrateConfig, TlsCipherIsAutoUnlessOneIsNamed) {
  using crx::migrate::TlsCipher;
  EXPECT_EQ(parse_migrate_config("", "x").tls_cipher, TlsCipher::Auto);
  EXPECT_EQ(parse_migrate_config("migration:\n  tls_cipher: chacha20-poly1305\n", "x").tls_cipher,
            TlsCipher::Chacha20Poly1305);
  EXPECT_EQ(error_of("migration:\n  tls_cipher: rc4\n"),
            "/etc/crx/config.yaml: migration.tls_cipher: unknown TLS cipher \"rc4\" (auto, "
            "aes-128-gcm or chacha20-poly1305)");
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

TEST(MigrateConfig, CertificateSettingsGoTogether) {
  auto c = parse_migrate_config(R"(
migration:
  tls_cert_file: /etc/crx/host.crt
  tls_key_file: /etc/crx/host.key
  tls_ca_file: /etc/crx/ca.crt
  tls_peer_name: db-2.example
)",
                                "x");
  EXPECT_EQ(c.tls_cert_file, "/etc/crx/host.crt");
  EXPECT_EQ(c.tls_key_file, "/etc/crx/host.key");
  EXPECT_EQ(c.tls_ca_file, "/etc/crx/ca.crt");
  EXPECT_EQ(c.tls_peer_name, "db-2.example");
  EXPECT_TRUE(c.uses_certificates());
  EXPECT_NO_THROW(crx::migrate::check_migrate_auth(c));
  EXPECT_FALSE(parse_migrate_config("", "x").uses_certificates());
  EXPECT_NO_THROW(crx::migrate::check_migrate_auth(parse_migrate_config("", "x")));

  auto error = [](const crx::migrate::MigrateConfig& m) -> std::pair<std::string, crx::Cause> {
    try {
      crx::migrate::check_migrate_auth(m);
    } catch (const crx::Error& e) {
      return {e.what(), e.cause()};
    }
    return {"no error", crx::Cause::Other};
  };
  auto half = c;
  half.tls_key_file.clear();
  half.tls_ca_file.clear();
  EXPECT_EQ(error(half).first,
            "certificates need --tls-cert, --tls-key and --tls-ca together: --tls-key "
            "(migration.tls_key_file) and --tls-ca (migration.tls_ca_file) missing");
  EXPECT_EQ(error(half).second, crx::Cause::Invalid);
  auto clear = c;
  clear.insecure_plaintext = true;
  EXPECT_NE(error(clear).first.find("--insecure-plaintext and certificates (--tls-cert) exclude "
                                    "each other"),
            std::string::npos);
  auto name_only = parse_migrate_config("", "x");
  name_only.tls_peer_name = "db-2.example";
  EXPECT_NE(error(name_only).first.find("--tls-peer-name (migration.tls_peer_name) needs "
                                        "certificates"),
            std::string::npos);
  auto clear_cipher = parse_migrate_config("", "x");
  clear_cipher.insecure_plaintext = true;
  EXPECT_NO_THROW(crx::migrate::check_migrate_auth(clear_cipher)) << "auto: nothing named";
  clear_cipher.tls_cipher = crx::migrate::TlsCipher::Chacha20Poly1305;
  EXPECT_EQ(error(clear_cipher).first,
            "--tls-cipher (migration.tls_cipher) names a TLS cipher, and --insecure-plaintext "
            "(migration.insecure_plaintext) has no TLS");
  EXPECT_EQ(error(clear_cipher).second, crx::Cause::Invalid);
  EXPECT_EQ(error_of("migration:\n  tls_cert_file: [a]\n"),
            "/etc/crx/config.yaml: migration.tls_cert_file has the wrong type");
}

}  // namespace
