// crx-verbs-seq idle: the receiver's memory without its verbs objects. A
// migration benchmark migrates this process in the same container as the
// receiver to learn what the verbs objects add: same binary, same libraries
// mapped, same message buffer and --mr-size memory written, but no device
// opened, so no uverbs fd, queue mappings, MRs or QPs for CRIU's plugin.
#include <time.h>

#include <memory>

#include "seq/clock.hpp"
#include "seq/roles.hpp"
#include "seq/session.hpp"

namespace crx::verbs_seq {

Summary run_idle(const Options& o, const std::function<void()>& ready) {
  Memory messages(size_t{o.qps} * o.window * o.size, 0);
  std::unique_ptr<Memory> extra;
  if (o.mr_size) extra = std::make_unique<Memory>(o.mr_size, kExtraFill, o.mr_huge);
  Summary sum;
  sum.role = Role::Idle;
  sum.qps = o.qps;
  sum.size = o.size;
  sum.mr_size = o.mr_size;
  ready();
  Watch watch(o);
  for (;;) {
    double now = now_s();
    if (g_stop_signal || g_finish_signal || (o.duration_s > 0 && now - watch.start() >= o.duration_s)) break;
    watch.maybe_progress(now, sum, 0);
    timespec pause{0, 100 * 1000 * 1000};
    nanosleep(&pause, nullptr);  // EINTR from a stop signal: the loop sees the flag
  }
  // A stop signal is how an idle run normally ends: not "interrupted".
  sum.elapsed_s = now_s() - watch.start();
  return sum;
}

}  // namespace crx::verbs_seq
