// The source side of `crx migrate`: connect, authenticate, pre-copy
// rounds, freeze, final dump straight into the destination, wait for the
// restore, commit — and on any failure before the commit, resume the
// source container where it was.
#pragma once
#include <atomic>
#include <chrono>
#include <functional>
#include <string>

#include "migrate/auth.hpp"
#include "migrate/config.hpp"
#include "migrate/net.hpp"
#include "migrate/report.hpp"
#include "migrate/sides.hpp"

namespace crx::migrate {

struct SenderOptions {
  HostPort to;
  const SharedKey* key = nullptr;          // Tls, Plaintext
  const CertCredentials* cert = nullptr;  // TlsCert
  // TLS on both connections (keyed by the shared key, or TlsCert: by
  // certificates), pages in kernel TLS; Plaintext only with
  // --insecure-plaintext (the receiver must say the same).
  WireSecurity wire = WireSecurity::Tls;
  TlsCipher cipher = TlsCipher::Auto;  // the suites to offer (tls_cipher.hpp)
  Manifest manifest;        // id, bundle, config hash... filled by the caller
  std::string rootfs_bundle;  // bundle dir to stream if the receiver asks
  std::string work_dir;     // RAM dir for this migration's images (created, removed)
  PreCopyPolicy pre_copy;
  std::chrono::milliseconds timeout{60000};          // each network step
  std::chrono::milliseconds restore_timeout{300000};  // waiting for the restore
  // --lazy (manifest.lazy): the longest wait for the destination to have
  // every page after it resumed; a dead link ends it sooner (keepalive).
  std::chrono::milliseconds lazy_timeout{1800000};
  std::function<void(const std::string&)> progress;
  const std::atomic<bool>* cancel = nullptr;  // set by SIGINT/SIGTERM
};

// Never throws for migration failures: the report says "migrated",
// "rolled back" (source running again), "in doubt" (source kept frozen
// because the commit's answer got lost) or, post-copy only, "lazy phase
// failed" (the destination ran the container and lost it for want of its
// memory; the source stays frozen as it was at the freeze), with the
// reason in .error.
MigrationReport migrate_out(SourceSide& source, const SenderOptions& opts);

}  // namespace crx::migrate
