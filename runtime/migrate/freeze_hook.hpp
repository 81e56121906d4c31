// `crx migrate --on-freeze CMD`: a command the migration runs once the
// container is frozen and before its final dump, and waits for.
//
// What it is for: whoever owns the container's network moves its address
// there (bundles/mpi's agent drops the source's route). Before the freeze
// the container still runs and talks, so taking the address earlier adds
// the connect and every pre-copy round to the silence its TCP peers see
// (and their keepalive may give up); after the final dump is too late,
// because the frozen source's kernel would acknowledge data that the
// destination's copy never gets (README.md, "Established TCP
// connections"). A progress line to an orchestrator would race with the
// dump; a hook the migration waits for does not.
#pragma once
#include <chrono>
#include <string>

#include "migrate/sides.hpp"

namespace crx::migrate {

// A SourceSide whose freeze() also runs `command` (/bin/sh -c) after the
// inner freeze. Its stdout and stderr are crx's stderr, it has
// CRX_MIGRATE_ID set to the container's id, and must exit 0 within
// `timeout` (else it is killed): otherwise freeze() throws, and the
// migration rolls back (resumes the source), so the hook's owner must undo
// what it did when the migration fails, as it would for any failure after
// the freeze.
class FreezeHookSource : public SourceSide {
 public:
  FreezeHookSource(SourceSide& inner, std::string command, std::string id,
                   std::chrono::milliseconds timeout)
      : inner_(inner), command_(std::move(command)), id_(std::move(id)), timeout_(timeout) {}
  void pre_dump(const std::string& images_dir, const std::string& parent, int page_fd) override {
    inner_.pre_dump(images_dir, parent, page_fd);
  }
  void prepare_dump(const std::string& images_dir, const std::string& parent,
                    int page_fd) override {
    inner_.prepare_dump(images_dir, parent, page_fd);
  }
  void freeze() override;
  void dump(const std::string& images_dir, const std::string& parent, int page_fd,
            ParentPages parent_pages) override {
    inner_.dump(images_dir, parent, page_fd, parent_pages);
  }
  void resume() override { inner_.resume(); }
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
  SourceSide& inner_;
  std::string command_;
  std::string id_;
  std::chrono::milliseconds timeout_;
};

}  // namespace crx::migrate
