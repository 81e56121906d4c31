// A SourceSide for containers with verbs objects: around the CRIU side,
// the QPs are stopped at the freeze, and the QPs the verbs plugin stopped
// are resumed whenever the source copy
// runs on — after every pre-dump (they must keep talking during pre-copy)
// and on rollback, before the container is thawed, so its partners
// un-pause and carry on with the source. destroy() needs nothing: the
// QPs end with the source's processes.
//
// The final dump of a container that has had verbs objects does not trust
// the soft-dirty bits of the pre-copy rounds (ParentPages::Check): the
// pages CRIU finds unchanged are read from the frozen tasks by the page
// filter (page_dedup.hpp), which sends those whose content changed (only
// those the MRs' write logs name where they can tell: CriuSource). The
// NIC's writes into pinned memory never set the bit, and the kernel keeps
// a pinned page's bit set only where a PTE maps it: a pre-dump clears the
// bit of a pinned transparent huge page (clear_soft_dirty_pmd() has no
// pinned check), so CRIU alone would leave out what the NIC wrote there
// since (runtime/migrate/README.md).
#pragma once
#include <string>

#include "migrate/sides.hpp"
#include "rdma/stopped_qps.hpp"

namespace crx::migrate {

class VerbsSource : public SourceSide {
 public:
  // has_verbs: the container had verbs objects before the migration began.
  VerbsSource(SourceSide& inner, rdma::StoppedQps& qps, std::string id, bool has_verbs)
      : inner_(inner), qps_(qps), id_(std::move(id)), verbs_seen_(has_verbs) {}
  void pre_dump(const std::string& images_dir, const std::string& parent, int page_fd) override;
  // Freezes, then stops the container's QPs at once (the dump would stop
  // them only once CRIU gets to the uverbs fds): a frozen receiver posts
  // no receives, and its partners' RNR retries must not run out meanwhile.
  // A failure rolls back (resume() resumes the QPs stopped so far).
  void prepare_dump(const std::string& images_dir, const std::string& parent,
                    int page_fd) override {
    inner_.prepare_dump(images_dir, parent, page_fd);
  }
  void freeze() override;
  // Checks the parent's pages once verbs objects were seen (above).
  void dump(const std::string& images_dir, const std::string& parent, int page_fd,
            ParentPages parent_pages) override {
    inner_.dump(images_dir, parent, page_fd, verbs_seen_ ? ParentPages::Check : parent_pages);
  }
  // Resumes the stopped QPs, then the container (also when the first
  // fails); throws afterwards if either failed.
  void resume() override;
  void destroy() override { inner_.destroy(); }
  std::unique_ptr<LazyDump> lazy_dump(const std::string& images_dir, UniqueFd page_fd) override {
    return inner_.lazy_dump(images_dir, std::move(page_fd));
  }
  bool zero_runs(bool destination_decodes) override { return inner_.zero_runs(destination_decodes); }
  bool compress_pages(bool destination_decodes) override {
    return inner_.compress_pages(destination_decodes);
  }
  void destination_makes_uts_ipc(bool yes) override { inner_.destination_makes_uts_ipc(yes); }
  void destination_takes_late_state(bool yes) override {
    inner_.destination_takes_late_state(yes);
  }
  void destination_has_elf_files(bool same) override { inner_.destination_has_elf_files(same); }
  void destination_cgroup(const std::string& path) override { inner_.destination_cgroup(path); }
  LateState late_state() override { return inner_.late_state(); }
  RoundStats last_round() const override { return inner_.last_round(); }

 private:
  std::string resume_qps() noexcept;  // "" or why not
  SourceSide& inner_;
  rdma::StoppedQps& qps_;
  std::string id_;
  bool verbs_seen_;  // at the start, or QPs stopped by a pre-dump or the freeze
};

}  // namespace crx::migrate
