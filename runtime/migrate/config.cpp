#include "migrate/config.hpp"

#include <yaml-cpp/yaml.h>

#include "common/error.hpp"
#include "common/fs.hpp"

namespace crx::migrate {
namespace {

template <typename T>
T get(const YAML::Node& node, const std::string& origin, const std::string& key) {
  try {
    return node.as<T>();
  } catch (const YAML::Exception&) {
    throw Error(origin + ": migration." + key + " has the wrong type");
  }
}

void check_keys(const YAML::Node& map, const std::string& origin, const std::string& where,
                std::initializer_list<const char*> known) {
  if (!map.IsMap()) throw Error(origin + ": " + where + " must be a mapping");
  for (const auto& kv : map) {
    std::string k = kv.first.as<std::string>();
    bool ok = false;
    for (const char* n : known) ok = ok || k == n;
    if (!ok) throw Error(origin + ": unknown key " + where + "." + k);
  }
}

}  // namespace

MigrateConfig parse_migrate_config(const std::string& text, const std::string& origin) {
  MigrateConfig c;
  YAML::Node root;
  try {
    root = YAML::Load(text);
  } catch (const YAML::Exception& e) {
    throw Error(origin + ": invalid YAML: " + e.what());
  }
  if (!root || root.IsNull()) return c;
  if (!root.IsMap()) throw Error(origin + ": top level must be a mapping");
  YAML::Node m = root["migration"];
  if (!m || m.IsNull()) return c;
  check_keys(m, origin, "migration",
             {"listen", "key_file", "image_dir", "timeout_seconds", "insecure_plaintext", "pre_copy",
              "tls_cert_file", "tls_key_file", "tls_ca_file", "tls_peer_name",
              "prepare_restore", "fill_after_resume", "tls_cipher"});
  if (m["listen"]) c.listen = get<std::string>(m["listen"], origin, "listen");
  if (m["key_file"]) c.key_file = get<std::string>(m["key_file"], origin, "key_file");
  if (m["image_dir"]) c.image_dir = get<std::string>(m["image_dir"], origin, "image_dir");
  if (m["timeout_seconds"]) {
    c.timeout_seconds = get<int>(m["timeout_seconds"], origin, "timeout_seconds");
    if (c.timeout_seconds < 1 || c.timeout_seconds > 86400)
      throw Error(origin + ": migration.timeout_seconds must be 1..86400");
  }
  if (m["prepare_restore"])
    c.prepare_restore = get<bool>(m["prepare_restore"], origin, "prepare_restore");
  if (m["fill_after_resume"]) {
    std::string v = get<std::string>(m["fill_after_resume"], origin, "fill_after_resume");
    if (v == "auto") c.fill_after_resume = FillAfterResume::Auto;
    else if (v == "always") c.fill_after_resume = FillAfterResume::Always;
    else if (v == "never") c.fill_after_resume = FillAfterResume::Never;
    else
      throw Error(origin + ": migration.fill_after_resume must be auto, always or never, not \"" +
                      v + "\"",
                  Cause::Invalid);
  }
  if (m["insecure_plaintext"])
    c.insecure_plaintext = get<bool>(m["insecure_plaintext"], origin, "insecure_plaintext");
  for (auto [key, field] : {std::pair{"tls_cert_file", &c.tls_cert_file},
                            std::pair{"tls_key_file", &c.tls_key_file},
                            std::pair{"tls_ca_file", &c.tls_ca_file},
                            std::pair{"tls_peer_name", &c.tls_peer_name}}) {
    if (m[key]) *field = get<std::string>(m[key], origin, key);
  }
  if (m["tls_cipher"]) {
    c.tls_cipher = parse_tls_cipher(get<std::string>(m["tls_cipher"], origin, "tls_cipher"),
                                    origin + ": migration.tls_cipher");
  }
  if (YAML::Node p = m["pre_copy"]; p && !p.IsNull()) {
    check_keys(p, origin, "migration.pre_copy",
               {"max_rounds", "min_shrink_percent", "fixed_downtime_seconds"});
    if (p["max_rounds"] && p["max_rounds"].IsScalar() && p["max_rounds"].Scalar() == "auto") {
      c.pre_copy.adaptive = true;
    } else if (p["max_rounds"]) {
      c.pre_copy.max_rounds = get<int>(p["max_rounds"], origin, "pre_copy.max_rounds");
      if (c.pre_copy.max_rounds < 0 || c.pre_copy.max_rounds > 64)
        throw Error(origin + ": migration.pre_copy.max_rounds must be 0..64");
    }
    if (p["min_shrink_percent"]) {
      c.pre_copy.min_shrink_percent =
          get<double>(p["min_shrink_percent"], origin, "pre_copy.min_shrink_percent");
      if (c.pre_copy.min_shrink_percent < 0 || c.pre_copy.min_shrink_percent > 100)
        throw Error(origin + ": migration.pre_copy.min_shrink_percent must be 0..100");
    }
    if (p["fixed_downtime_seconds"]) {
      c.pre_copy.fixed_downtime_seconds =
          get<double>(p["fixed_downtime_seconds"], origin, "pre_copy.fixed_downtime_seconds");
      if (!(c.pre_copy.fixed_downtime_seconds > 0 && c.pre_copy.fixed_downtime_seconds <= 3600))
        throw Error(origin + ": migration.pre_copy.fixed_downtime_seconds must be in (0, 3600]");
    }
  }
  if (c.image_dir.empty() || c.image_dir[0] != '/')
    throw Error(origin + ": migration.image_dir must be an absolute path");
  return c;
}

void check_migrate_auth(const MigrateConfig& c) {
  if (c.insecure_plaintext && c.tls_cipher != TlsCipher::Auto) {
    throw Error("--tls-cipher (migration.tls_cipher) names a TLS cipher, and "
                "--insecure-plaintext (migration.insecure_plaintext) has no TLS",
                Cause::Invalid);
  }
  if (!c.uses_certificates()) {
    if (!c.tls_peer_name.empty()) {
      throw Error("--tls-peer-name (migration.tls_peer_name) needs certificates: --tls-cert, "
                  "--tls-key and --tls-ca",
                  Cause::Invalid);
    }
    return;
  }
  std::string missing;
  for (auto [value, flag] : {std::pair{&c.tls_cert_file, "--tls-cert (migration.tls_cert_file)"},
                             std::pair{&c.tls_key_file, "--tls-key (migration.tls_key_file)"},
                             std::pair{&c.tls_ca_file, "--tls-ca (migration.tls_ca_file)"}}) {
    if (value->empty()) missing += missing.empty() ? flag : std::string(" and ") + flag;
  }
  if (!missing.empty()) {
    throw Error("certificates need --tls-cert, --tls-key and --tls-ca together: " + missing +
                    " missing",
                Cause::Invalid);
  }
  if (c.insecure_plaintext) {
    throw Error("--insecure-plaintext and certificates (--tls-cert) exclude each other: clear text "
                "proves only the shared key",
                Cause::Invalid);
  }
}

MigrateConfig load_migrate_config(const std::string& path, bool required) {
  if (!path_exists(path)) {
    if (required) throw Error("config file " + path + " does not exist");
    return {};
  }
  return parse_migrate_config(read_file(path), path);
}

}  // namespace crx::migrate
