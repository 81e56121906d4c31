// A SourceSide for containers with verbs objects: around the CRIU side,
// the QPs are stopped at the freeze, and the QPs the verbs plugin stopped
// are resumed whenever the source copy
// runs on — after every pre-dump (they must keep talking during pre-copy)
// and on rollback, before the container is thawed, so its partners
// un-pause and carry on with the source. destroy() needs nothing: the
// QPs end with the source's processes.
#pragma once
#include <string>

#include "migrate/sides.hpp"
#include "rdma/stopped_qps.hpp"

namespace crx::migrate {

class VerbsSource : public SourceSide {
 public:
  VerbsSource(SourceSide& inner, rdma::StoppedQps& qps, std::string id)
      : inner_(inner), qps_(qps), id_(std::move(id)) {}
  void pre_dump(const std::string& images_dir, const std::string& parent, int page_fd) override;
  // Freezes, then stops the container's QPs at once (the dump would stop
  // them only once CRIU gets to the uverbs fds): a frozen receiver posts
  // no receives, and its partners' RNR retries must not run out meanwhile.
  // A failure rolls back (resume() resumes the QPs stopped so far).
  void freeze() override;
  void dump(const std::string& images_dir, const std::string& parent, int page_fd) override {
    inner_.dump(images_dir, parent, page_fd);
  }
  // Resumes the stopped QPs, then the container (also when the first
  // fails); throws afterwards if either failed.
  void resume() override;
  void destroy() override { inner_.destroy(); }
  std::unique_ptr<LazyDump> lazy_dump(const std::string& images_dir, UniqueFd page_fd) override {
    return inner_.lazy_dump(images_dir, std::move(page_fd));
  }
  PageDedupStats last_round_dedup() const override { return inner_.last_round_dedup(); }

 private:
  std::string resume_qps() noexcept;  // "" or why not
  SourceSide& inner_;
  rdma::StoppedQps& qps_;
  std::string id_;
};

}  // namespace crx::migrate
