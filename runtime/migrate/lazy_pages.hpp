// The destination's half of a post-copy migration (`crx migrate --lazy`):
// `criu lazy-pages` on the final round's images, fed from the source's
// frozen tasks over the migration's page channel, feeding the restored
// tasks through userfaultfd: a page a task touches first is fetched at once
// (on demand), the rest is pulled in the background once the restore is
// done, until every page is in place; then the daemon tells the source's
// page server so and exits. Without a channel the daemon reads the pages
// from images_dir itself: the fill after the resume of a pre-copy
// migration (fill_plan.hpp), whose pages are all here already.
//
// The page channel in kernel TLS reaches the daemon through a PageRelay (as
// the page server's does: CRIU polls and reads with MSG_DONTWAIT, which a
// kTLS socket answers with EAGAIN until a whole record is in) that holds
// the daemon's end open when the network fails (PageRelay::OnEnd::Hold):
// the daemon must outlive the restored tasks, because when it exits their
// userfaultfds close, and a page not yet copied then reads as zeros. The
// receiver kills the tasks first, then destroys this object.
#pragma once
#include <chrono>
#include <memory>
#include <string>
#include <string_view>

#include "common/child_process.hpp"
#include "common/unique_fd.hpp"
#include "migrate/page_relay.hpp"
#include "migrate/sides.hpp"

namespace crx::migrate {

// What the daemon's log (-v4) says it did: faults ("#PF at ADDR" lines),
// pages copied ("uffd_copy: ADDR/LEN"), and of those the pages a task had
// faulted on before they were copied (on demand; the rest were pushed
// ahead of any fault). Per task: lines are "PID-UFFD: ...". bytes and
// seconds are left 0.
LazyStats lazy_stats_from_log(std::string_view log);

class CriuLazyPages : public LazyPages {
 public:
  // Starts the daemon on images_dir (work_dir: where the restore will
  // connect to it, the restore's own work dir) and returns once it listens
  // there; channel empty: the pages are images_dir's. Throws Error with
  // the tail of its log when it does not start.
  CriuLazyPages(const std::string& images_dir, const std::string& work_dir, UniqueFd channel,
                std::chrono::milliseconds start_timeout);
  // Starts the daemon on images_dir before its images are there, and
  // returns once it waits for them: images_dir must hold a FIFO named
  // inventory.img (kGate), the first image CRIU 3.17's daemon reads
  // (cr_lazy_pages(), prepare_dummy_pstree(): check_img_inventory()); this
  // object holds the FIFO's writing end and the daemon waits in its first
  // read until open_gate(). Its start (the exec, CRIU's libraries,
  // kerndat) is then over before the images arrive. Its pages are
  // images_dir's. Throws Error, nothing left, when it does not get there
  // within start_timeout.
  struct Gated {};
  CriuLazyPages(Gated, const std::string& images_dir, const std::string& work_dir,
                std::chrono::milliseconds start_timeout);
  ~CriuLazyPages() override;
  // Gated: the rest of images_dir is in place; writes the file `image`
  // (the round's inventory.img) into the FIFO, closes it and returns once
  // the daemon listens (as the first constructor). Throws Error, the
  // daemon killed, when it does not get that far within timeout.
  void open_gate(const std::string& image, std::chrono::milliseconds timeout);
  LazyStats wait(std::chrono::milliseconds timeout) override;

  static constexpr const char* kGate = "inventory.img";

 private:
  void spawn_daemon(const std::string& images_dir, UniqueFd channel);
  // Until the daemon has `gate` open: then gate_ is its writing end.
  void hold_gate(const std::string& gate, std::chrono::milliseconds timeout);
  // Until the daemon's status byte (it listens), or throws with its log.
  void wait_listening(std::chrono::milliseconds timeout);
  std::string log_tail() const;
  std::string work_dir_;
  UniqueFd gate_;  // Gated: the FIFO's writing end, until open_gate()
  std::unique_ptr<PageRelay> relay_;  // kernel TLS only
  UniqueFd status_;  // the daemon writes a byte here once it listens
  ChildProcess child_;
};

}  // namespace crx::migrate
