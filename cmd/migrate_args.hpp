// What `crx migrate` and `crx receive` share on their command lines: the
// config file, the settings of it a flag overrides, and the report format.
#pragma once
#include <cstdio>
#include <string>

#include "cli.hpp"
#include "migrate/config.hpp"
#include "migrate/report.hpp"

namespace crx::cmd {

struct MigrateConfigArgs {
  std::string config = migrate::kDefaultConfigPath;
  std::string key_file;
  std::string image_dir;
  int timeout = 0;
  bool insecure_plaintext = false;
  std::string format = "text";

  // --config, --key, --image-dir (described by image_dir_help), --timeout.
  void add_config_flags(CLI::App* sub, const char* image_dir_help) {
    sub->add_option("--config", config, "config file (default /etc/crx/config.yaml)");
    sub->add_option("--key", key_file, "shared key file (mode 0600)");
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
    return cfg;
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
