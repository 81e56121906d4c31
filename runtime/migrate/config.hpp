// Migration settings from /etc/crx/config.yaml (section "migration"):
//
//   migration:
//     listen: 0.0.0.0:7070          # crx receive --listen
//     key_file: /etc/crx/migrate.key  # 0600, shared by both hosts
//     image_dir: /run/crx-migrate   # RAM (tmpfs) dirs for images; not in
//                                   # the state root (it would take an id)
//     timeout_seconds: 60           # per network step
//     insecure_plaintext: false     # true: no TLS (--insecure-plaintext);
//                                   # both ends must agree
//     tls_cert_file: /etc/crx/migrate.crt  # certificates instead of the key
//     tls_key_file: /etc/crx/migrate.pem   # (--tls-cert, --tls-key 0600,
//     tls_ca_file: /etc/crx/migrate-ca.crt # --tls-ca; all three or none;
//     tls_peer_name: ""                    # --tls-peer-name; see
//                                          # cert_credentials.hpp)
//     tls_cipher: auto              # --tls-cipher: auto, aes-128-gcm or
//                                   # chacha20-poly1305 (tls_cipher.hpp)
//     prepare_restore: true         # crx receive: prepare the restore
//                                   # before the freeze (README.md,
//                                   # "Prepared restore"); false: at the
//                                   # restore, in the downtime
//     fill_after_resume: auto       # crx receive: resume a pre-copied
//                                   # container before its pages are
//                                   # copied in (README.md, "Pages filled
//                                   # after the resume"): auto (from
//                                   # kFillAfterResumeMinBytes on),
//                                   # always, never
//     pre_copy:
//       max_rounds: 0               # crx migrate --pre-copy N, or auto
//       min_shrink_percent: 20      # stop when a round shrinks less
//       fixed_downtime_seconds: 2   # auto: downtime besides the memory
//
// Every key is optional; command-line flags override what the file says.
#pragma once
#include <cstdint>
#include <string>

#include "migrate/tls_cipher.hpp"

namespace crx::migrate {

struct PreCopyPolicy {
  int max_rounds = 0;
  // A round must shrink the dirty set by at least this much versus the
  // previous round, else pre-copy stops and the final dump follows.
  double min_shrink_percent = 20.0;
  // --pre-copy auto (precopy.hpp): rounds from the measured dirty rate and
  // bandwidth; max_rounds is then unused. min_shrink_percent is the least
  // cut of the final round another round must promise.
  bool adaptive = false;
  // The downtime's part that is not the final round's memory (freeze,
  // CRIU's dump and restore bookkeeping), measured on the test bed.
  double fixed_downtime_seconds = 2.0;
};

// Whether the destination resumes a pre-copied container before the pages
// it received are copied into it (receiver.cpp).
enum class FillAfterResume { Never, Auto, Always };

// Auto: from this much memory to fill on (fill_plan.hpp). Below it CRIU's
// copy in the restore costs about what the fill adds to the window (its
// plan, the daemon let go, the tasks' first faults): README.md, "Pages
// filled after the resume". 32 MiB until the daemon started before the
// freeze (2026-12-06); with it, 16 MiB containers gained too.
inline constexpr uint64_t kFillAfterResumeMinBytes = 8ull << 20;

struct MigrateConfig {
  std::string listen = "0.0.0.0:7070";
  std::string key_file = "/etc/crx/migrate.key";
  std::string image_dir = "/run/crx-migrate";
  int timeout_seconds = 60;
  bool insecure_plaintext = false;
  // X.509 instead of the shared key (cert_credentials.hpp): all three
  // files, or none. peer_name is optional.
  std::string tls_cert_file, tls_key_file, tls_ca_file, tls_peer_name;
  TlsCipher tls_cipher = TlsCipher::Auto;
  PreCopyPolicy pre_copy;
  // crx receive: the restore's cgroup, mounts and waiting CRIU are made
  // when the manifest is accepted, not after the final dump.
  bool prepare_restore = true;
  FillAfterResume fill_after_resume = FillAfterResume::Auto;

  bool uses_certificates() const {
    return !tls_cert_file.empty() || !tls_key_file.empty() || !tls_ca_file.empty();
  }
};

// The authentication the settings ask for is complete and not
// contradictory: the three certificate settings together, not with
// --insecure-plaintext; a peer name only with certificates; a named
// cipher not with --insecure-plaintext. Throws Error
// (Cause::Invalid) naming the flags and config keys.
void check_migrate_auth(const MigrateConfig& c);

inline constexpr const char* kDefaultConfigPath = "/etc/crx/config.yaml";

// A missing file gives the defaults unless required; a malformed one, an
// unknown key in the migration section or an out-of-range value throws an
// Error naming the file and the key.
MigrateConfig load_migrate_config(const std::string& path = kDefaultConfigPath,
                                  bool required = false);
MigrateConfig parse_migrate_config(const std::string& yaml_text, const std::string& origin);

}  // namespace crx::migrate
