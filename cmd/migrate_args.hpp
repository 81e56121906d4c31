// What `crx migrate` and `crx receive` share on their command lines: the
// config file, the settings of it a flag overrides, and the report format.
#pragma once
#include <cstdio>
#include <optional>
#include <string>

#include "cli.hpp"
#include "common/error.hpp"
#include "migrate/auth.hpp"
#include "migrate/cert_credentials.hpp"
#include "migrate/config.hpp"
#include "migrate/report.hpp"

namespace crx::cmd {

struct MigrateConfigArgs {
  std::string config = migrate::kDefaultConfigPath;
  std::string key_file;
  std::string image_dir;
  int timeout = 0;
  bool insecure_plaintext = false;
  std::string tls_cert, tls_key, tls_ca, tls_peer_name, tls_cipher;
  std::string format = "text";

  // --config, --key, --tls-*, --image-dir (described by image_dir_help),
  // --timeout.
  void add_config_flags(CLI::App* sub, const char* image_dir_help) {
    sub->add_option("--config", config, "config file (default /etc/crx/config.yaml)");
    sub->add_option("--key", key_file, "shared key file (mode 0600)");
    sub->add_option("--tls-cert", tls_cert,
                    "this host's X.509 certificate (PEM, chain after it): authenticate with "
                    "certificates instead of the shared key; needs --tls-key and --tls-ca, and "
                    "the other end must use certificates too");
    sub->add_option("--tls-key", tls_key, "the private key of --tls-cert (PEM, unencrypted, mode 0600)");
    sub->add_option("--tls-ca", tls_ca,
                    "CA certificate(s) (PEM) the other end's certificate must chain to; any CRLs "
                    "in it are checked");
    sub->add_option("--tls-peer-name", tls_peer_name,
                    "with certificates: the DNS name or IP address the other end's certificate "
                    "must carry (default: any certificate the CA issued)");
    sub->add_option("--tls-cipher", tls_cipher,
                    "TLS 1.3 cipher: auto (the faster in this kernel, measured; default), "
                    "aes-128-gcm or chacha20-poly1305 (then only that one)");
    sub->add_option("--image-dir", image_dir, image_dir_help);
    sub->add_option("--timeout", timeout, "seconds per network step");
  }
  // --insecure-plaintext and --format.
  void add_wire_and_format_flags(CLI::App* sub) {
    sub->add_flag("--insecure-plaintext", insecure_plaintext,
                  "no TLS: the memory and images cross the network in clear text, only the key "
                  "is proved; the other end must say so too");
    sub->add_option("--format", format, "report format: text or json")
        ->check(CLI::IsMember({"text", "json"}));
  }

  // The config file (required when named by --config), the flags over it.
  migrate::MigrateConfig load() const {
    auto cfg = migrate::load_migrate_config(config, config != migrate::kDefaultConfigPath);
    if (!key_file.empty()) cfg.key_file = key_file;
    if (!image_dir.empty()) cfg.image_dir = image_dir;
    if (timeout > 0) cfg.timeout_seconds = timeout;
    if (insecure_plaintext) cfg.insecure_plaintext = true;
    if (!tls_cert.empty()) cfg.tls_cert_file = tls_cert;
    if (!tls_key.empty()) cfg.tls_key_file = tls_key;
    if (!tls_ca.empty()) cfg.tls_ca_file = tls_ca;
    if (!tls_peer_name.empty()) cfg.tls_peer_name = tls_peer_name;
    if (!tls_cipher.empty()) cfg.tls_cipher = migrate::parse_tls_cipher(tls_cipher, "--tls-cipher");
    migrate::check_migrate_auth(cfg);
    if (cfg.uses_certificates() && !key_file.empty()) {
      throw Error("--key and certificates (--tls-cert) exclude each other: use one or the other",
                  Cause::Invalid);
    }
    return cfg;
  }

  // What this end authenticates with, as cfg says: certificates when
  // configured (the key file is then not read), else the shared key.
  struct Auth {
    migrate::WireSecurity wire = migrate::WireSecurity::Tls;
    migrate::TlsCipher cipher = migrate::TlsCipher::Auto;
    std::optional<migrate::SharedKey> key;
    std::optional<migrate::CertCredentials> cert;
    // For the options of migrate_out / receive_one.
    template <typename Options>
    void apply(Options& o) const {
      o.wire = wire;
      o.cipher = cipher;
      o.key = key ? &*key : nullptr;
      o.cert = cert ? &*cert : nullptr;
    }
  };
  static Auth auth(const migrate::MigrateConfig& cfg) {
    Auth a;
    a.cipher = cfg.tls_cipher;
    if (cfg.uses_certificates()) {
      a.wire = migrate::WireSecurity::TlsCert;
      a.cert = migrate::CertCredentials::from_files(
          {cfg.tls_cert_file, cfg.tls_key_file, cfg.tls_ca_file, cfg.tls_peer_name});
      return a;
    }
    a.wire = cfg.insecure_plaintext ? migrate::WireSecurity::Plaintext : migrate::WireSecurity::Tls;
    a.key = migrate::SharedKey::from_file(cfg.key_file);
    return a;
  }

  // The report on stdout, as --format says.
  void print(const migrate::MigrationReport& report) const {
    if (format == "json") {
      std::printf("%s\n", report.to_json().c_str());
    } else {
      std::printf("%s", report.to_text().c_str());
    }
    std::fflush(stdout);
  }
};

}  // namespace crx::cmd
