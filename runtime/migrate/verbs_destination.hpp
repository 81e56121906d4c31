// A DestinationSide for containers with verbs objects, around the CRIU
// side (which restores with CRX_VERBS_DEFER_RESUME=1: the plugin leaves
// the restored QPs stopped):
//   accept: the manifest's rdma section is checked against this node
//     (rdma/preflight.hpp) before the inner side accepts, so a migration
//     that cannot restore is refused while the source still runs;
//   restore: once the inner restore returns — the sender has committed and
//     the tasks run — the restored container's QPs are resumed: a rollback
//     never leaves a partner talking to a copy that is then dropped. The
//     count and time go to crx-verbs-resume.json in the images dir
//     (rdma/plugin_stats.hpp) for the report. The restore's `resumed`
//     follows the QPs' resume for images with verbs objects, and is the
//     inner restore's own for images without.
#pragma once
#include "migrate/sides.hpp"
#include "rdma/rdma_host.hpp"
#include "rdma/stopped_qps.hpp"

namespace crx::migrate {

class VerbsDestination : public DestinationSide {
 public:
  VerbsDestination(DestinationSide& inner, rdma::RdmaHost& host, rdma::StoppedQps& qps)
      : inner_(inner), host_(host), qps_(qps) {}
  Acceptance accept(const Manifest& m) override;
  std::unique_ptr<PageSink> start_page_server(const std::string& round_dir, UniqueFd channel,
                                              bool zero_runs) override {
    return inner_.start_page_server(round_dir, std::move(channel), zero_runs);
  }
  // Post-copy, and pages filled after the resume, are refused for verbs
  // containers (receiver.cpp) before this; forwarded for every other
  // container that comes through here.
  bool can_fill_after_resume() override { return inner_.can_fill_after_resume(); }
  std::unique_ptr<ReadyFill> prepare_fill(const std::string& round_dir,
                                          const std::string& work_dir) override {
    return inner_.prepare_fill(round_dir, work_dir);
  }
  std::unique_ptr<LazyPages> start_fill(const std::string& round_dir, const std::string& work_dir,
                                        uint64_t min_bytes,
                                        std::unique_ptr<ReadyFill> ahead) override {
    return inner_.start_fill(round_dir, work_dir, min_bytes, std::move(ahead));
  }
  std::unique_ptr<LazyPages> start_lazy_pages(const std::string& round_dir,
                                              const std::string& work_dir,
                                              UniqueFd channel) override {
    return inner_.start_lazy_pages(round_dir, work_dir, std::move(channel));
  }
  // The verbs objects are not made here: the plugin makes them inside
  // CRIU's restore (runtime/migrate/README.md, "Prepared restore").
  std::unique_ptr<PreparedRestore> prepare_restore(const Manifest& m, const Acceptance& a,
                                                   const std::string& session_dir,
                                                   const std::string& work_dir) override {
    return inner_.prepare_restore(m, a, session_dir, work_dir);
  }
  int restore(PreparedRestore& prepared, const std::string& images_dir, const Manifest& m,
              const std::function<void()>& hold, const std::function<void()>& resumed) override;
  void discard(const Manifest& m) noexcept override { inner_.discard(m); }

 private:
  DestinationSide& inner_;
  rdma::RdmaHost& host_;
  rdma::StoppedQps& qps_;
};

}  // namespace crx::migrate
