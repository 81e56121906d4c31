#include "migrate/verbs_source.hpp"

#include <chrono>

#include "common/error.hpp"
#include "common/log.hpp"

namespace crx::migrate {

std::string VerbsSource::resume_qps() noexcept {
  try {
    int n = qps_.resume_stopped(id_);
    if (n > 0) {
      verbs_seen_ = true;
      log::debug("migrate: resumed " + std::to_string(n) + " stopped QPs of " + id_);
    }
    return {};
  } catch (const std::exception& e) {
    return e.what();
  }
}

void VerbsSource::pre_dump(const std::string& images_dir, const std::string& parent, int page_fd) {
  try {
    inner_.pre_dump(images_dir, parent, page_fd);
  } catch (...) {
    if (std::string why = resume_qps(); !why.empty()) log::warn("migrate: " + why);
    throw;
  }
  if (std::string why = resume_qps(); !why.empty())
    throw Error("pre-dump of " + id_ + ": its QPs stay stopped: " + why);
}

void VerbsSource::freeze() {
  inner_.freeze();
  const auto t0 = std::chrono::steady_clock::now();
  int n = qps_.stop_all(id_);
  if (n > 0) verbs_seen_ = true;
  const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                      std::chrono::steady_clock::now() - t0).count();
  log::debug("migrate: stopped " + std::to_string(n) + " QPs of " + id_ + " at the freeze, in " +
             std::to_string(ms) + " ms");
}

void VerbsSource::resume() {
  std::string why = resume_qps();
  inner_.resume();
  if (!why.empty()) throw Error("the source runs again but its QPs stay stopped: " + why);
}

}  // namespace crx::migrate
