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
  ~CriuLazyPages() override;
  LazyStats wait(std::chrono::milliseconds timeout) override;

 private:
  std::string log_tail() const;
  std::string work_dir_;
  std::unique_ptr<PageRelay> relay_;  // kernel TLS only
  ChildProcess child_;
};

}  // namespace crx::migrate
