// The destination side: `crx receive` serves migrations one at a time.
// Authenticates the sender before reading any image byte, keeps images in
// a RAM directory, runs one page server per round, restores, holds the
// restored container before it resumes until the sender commits, and on any
// failure removes what it restored.
#pragma once
#include <chrono>
#include <functional>
#include <string>

#include "migrate/auth.hpp"
#include "migrate/config.hpp"
#include "migrate/net.hpp"
#include "migrate/report.hpp"
#include "migrate/sides.hpp"

namespace crx::migrate {

struct ReceiverOptions {
  const SharedKey* key = nullptr;          // Tls, Plaintext
  const CertCredentials* cert = nullptr;  // TlsCert
  WireSecurity wire = WireSecurity::Tls;  // a sender asking for another is refused
  TlsCipher cipher = TlsCipher::Auto;     // the suites to accept (tls_cipher.hpp)
  std::string image_root;   // RAM dir; one subdir per migration, removed after
  uint64_t max_image_bytes = 1ull << 30;  // non-page images per migration
  std::chrono::milliseconds timeout{60000};
  // Longest wait for the commit while the restored container is held.
  std::chrono::milliseconds commit_timeout{60000};
  // Post-copy (--lazy): the longest lazy phase, from the resume to the
  // last page; a dead link ends it sooner (keepalive on the page channel).
  std::chrono::milliseconds lazy_timeout{1800000};
  // Prepare the restore before the freeze (DestinationSide::prepare_restore,
  // right after the manifest is accepted); false: at the restore, in the
  // frozen window (migration.prepare_restore: false; for comparison).
  bool prepare_restore = true;
  // Resume a pre-copied container before the pages the rounds brought are
  // copied into it; a local lazy-pages daemon fills them (README.md,
  // "Pages filled after the resume"). migration.fill_after_resume.
  FillAfterResume fill_after_resume = FillAfterResume::Auto;
  std::function<void(const std::string&)> progress;
};

// Serves one migration on an accepted control connection; page channels
// are accepted from `listener`. Never throws for migration failures: the
// report's outcome is "migrated", "rolled back" or, post-copy, "lazy phase
// failed" (the container resumed here, its memory stopped coming, and its
// copy here was killed), with .error.
MigrationReport receive_one(TcpListener& listener, UniqueFd control, const std::string& peer,
                            DestinationSide& dest, const ReceiverOptions& opts);

}  // namespace crx::migrate
