#include "migrate/verbs_destination.hpp"

#include <chrono>

#include "common/log.hpp"
#include "rdma/plugin_stats.hpp"
#include "rdma/preflight.hpp"

namespace crx::migrate {

Acceptance VerbsDestination::accept(const Manifest& m) {
  if (m.rdma) rdma::check_destination(*m.rdma, host_);
  return inner_.accept(m);
}

int VerbsDestination::restore(PreparedRestore& prepared, const std::string& images_dir,
                              const Manifest& m, const std::function<void()>& hold,
                              const std::function<void()>& resumed) {
  // A container with verbs objects runs for its partners only once its QPs
  // do (below); they are resumed through its state dir, which the inner
  // restore holds until it returns, so `resumed` waits for that. One
  // without runs at the inner restore's `resumed`.
  bool told = false;
  std::function<void()> inner_resumed;
  if (!rdma::verbs_dumped(images_dir)) {
    inner_resumed = [&] {
      told = true;
      if (resumed) resumed();
    };
  }
  int pid = inner_.restore(prepared, images_dir, m, hold, inner_resumed);
  // Committed: the container is this node's now, whatever happens next. A
  // QP that cannot be resumed is reported, not rolled back (the source is
  // being destroyed).
  auto t0 = std::chrono::steady_clock::now();
  rdma::VerbsResumeStats stats;
  try {
    stats.qps = static_cast<uint64_t>(qps_.resume_stopped(m.id));
  } catch (const std::exception& e) {
    log::error("receive: " + m.id + " runs here, but resuming its QPs failed: " + e.what());
  }
  stats.resume_ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  if (stats.qps > 0) {
    try {
      rdma::write_verbs_resume_stats(images_dir, stats);
    } catch (const std::exception& e) {
      log::warn(std::string("receive: ") + e.what());
    }
  }
  if (!told && resumed) resumed();
  return pid;
}

}  // namespace crx::migrate
