// A CRIU client over `criu swrk <fd>`: one CRIU child per request, talking
// rpc.proto's criu_req/criu_resp over a SOCK_SEQPACKET socketpair.
//
// CRIU opens images_dir_fd, work_dir_fd and status_fd through
// /proc/<our pid>/fd, so those stay ours; fds CRIU must use itself (the page
// server socket, restore's inherit fds) are inherited by the child under the
// same number. Errors carry the tail of CRIU's log:
//   "criu dump failed: Error (criu/cr-dump.c:1234): ..."
#pragma once
#include <sys/types.h>

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "checkpoint/criu_options.hpp"
#include "common/unique_fd.hpp"

namespace crx::checkpoint {

struct CriuVersion {
  int major = 0;
  int minor = 0;
  int sublevel = 0;
  std::string gitid;
  // e.g. 31701 for 3.17.1 (CRIU's own comparable number)
  int number() const { return major * 10000 + minor * 100 + sublevel; }
};

// CRIU's notification of a phase ("pre-dump", "post-dump",
// "setup-namespaces", "post-restore", "network-lock", "orphan-pts-master"...).
// `fd` is set when CRIU passed a descriptor with it (orphan-pts-master).
struct Notification {
  std::string script;
  pid_t pid = 0;
  UniqueFd fd;
};
// Throwing from the handler makes CRIU abort the operation; the exception's
// message is then the one the caller sees.
using NotifyHandler = std::function<void(Notification&)>;

struct DumpStats {
  bool restored = false;  // CRIU's dump_resp.restored (dump of self only)
};

// The path of the criu binary ("criu" = search PATH). Tests and the VM
// harness may point it elsewhere.
void set_criu_binary(std::string path);
// What set_criu_binary() set: every criu this process runs (swrk, page
// server, lazy-pages, check) is this one.
const std::string& criu_binary();

CriuVersion criu_version();
// CRIU's CHECK request; false (never throws for a failed check).
bool criu_check();

// CRIU's cache of what the kernel can do (/run/criu.kdat), made now when
// there is none: a CRIU that starts without it probes the kernel, among
// other things with a TCP connection over loopback, which fails in a
// network namespace whose loopback is down (DumpOptions::criu_namespace_fds).
// A FEATURE_CHECK request makes it (CRIU 3.17 probes and saves the cache
// for any request). A cache that exists is trusted: a stale one (another
// CRIU's) makes that CRIU's next run probe again. Throws Error when CRIU
// fails.
void criu_ensure_kerndat_cache();
void criu_dump(const DumpOptions& opts, const NotifyHandler& notify = {});
// A memory-only round; with opts.page_server the pages go there.
void criu_pre_dump(const DumpOptions& opts, const NotifyHandler& notify = {});
// Returns the pid of the restored init (our child with rst_sibling).
pid_t criu_restore(const RestoreOptions& opts, const NotifyHandler& notify = {});

// criu_restore in two steps: `criu swrk` exec'd now and waiting on its
// socket, the request sent by run(), once, when the images are there (a
// migration starts it while pre-copy runs: the exec is ~0.17 s of a TCG
// guest's downtime otherwise). What the child must have from its start
// is fixed here: the fds it inherits (the request's inherit_fds, e.g. a
// joined network namespace), the verbs plugin's CRX_VERBS_DEFER_RESUME
// and its stdout/stderr; run() refuses (Cause::Invalid) a request that
// needs another fd or the other plugin mode. The child dies with the
// calling thread (PR_SET_PDEATHSIG, as every restoring criu); destroying
// this unused ends it (its socket closes, it exits; SIGKILL after 2 s).
class StartedRestore {
 public:
  struct Setup {
    std::vector<int> inherit_fds;     // inherited under their own numbers
    bool defer_verbs_resume = false;  // RestoreOptions::defer_verbs_resume
    int output_fd = -1;               // CRIU's stdout and stderr; -1: /dev/null
    // The verbs plugin (crx_ibverbs.so) to load into the waiting criu now,
    // "" for none: its libraries and libibverbs' providers are then loaded
    // before run(), not in it (the plugin's constructor does it; CRIU's
    // own dlopen of the same file finds it loaded). Unused when crx runs
    // with an LD_PRELOAD of its own or the file is not there.
    std::string preload_verbs_plugin;
  };
  explicit StartedRestore(const Setup& s);
  StartedRestore(const StartedRestore&) = delete;
  StartedRestore& operator=(const StartedRestore&) = delete;
  ~StartedRestore();
  // criu_restore's request on the waiting child; returns the restored
  // init's pid. The child is gone afterwards, whatever the outcome.
  pid_t run(const RestoreOptions& opts, const NotifyHandler& notify = {});
  // The waiting criu's pid; -1 once run.
  pid_t pid() const;

 private:
  class Session;
  Setup setup_;
  std::unique_ptr<Session> session_;
};

// criu_dump in two steps, StartedRestore's twin for a dump: `criu swrk`
// exec'd now and asked its version with keep_open, so that when the
// constructor returns CRIU has started up (loader, libraries, main) and
// waits on its socket; run() sends the dump request, once, if it fits. A
// migration starts it before the freeze: CRIU's exec and start-up are
// ~0.1 s of a TCG guest's frozen window otherwise (runtime/migrate/
// README.md, "The final dump's CRIU, started and waiting"). What the child
// has from its start is fixed here: the fds it inherits (the page
// channel), its stdout/stderr and the namespaces it runs in. The
// child does not die with us (CRIU must let go of the tasks it seized);
// destroying this unused ends it (its socket closes, it exits; SIGKILL
// after 2 s).
class StartedDump {
 public:
  struct Setup {
    std::vector<int> inherit_fds;  // inherited under their own numbers
    int output_fd = -1;            // CRIU's stdout and stderr; -1: /dev/null
    std::vector<int> namespace_fds;  // DumpOptions::criu_namespace_fds; none: ours
  };
  // Throws Error when CRIU does not start or does not answer.
  explicit StartedDump(const Setup& s);
  StartedDump(const StartedDump&) = delete;
  StartedDump& operator=(const StartedDump&) = delete;
  ~StartedDump();
  // criu_dump's request on the waiting child, if the child fits it (the
  // request names no fd the child did not inherit and wants CRIU in the
  // namespaces the child is in): true once run; false, and nothing done,
  // when it does not fit (the dump is then criu_dump's, with a criu of its
  // own). Throws as criu_dump does, and Error (Cause::Invalid) when run
  // twice. A child that did not fit, or failed, is gone afterwards; one
  // that answered is exiting (its images are all written, the tasks let
  // go): waiting for its end is this object's destruction, so that it can
  // come after what the frozen window needs first (CRIU's exit took 60 ms
  // of a profiled window in a test-bed guest).
  //
  // After send_ahead(), run() answers the CRIU that waits at its pre-dump:
  // with the request sent (the same options, fds and namespaces), CRIU
  // goes on and run() is as above; with any other, CRIU is told to stop
  // there (it has touched no task) and is gone, and run() is false.
  bool run(const DumpOptions& opts, const NotifyHandler& notify = {});
  // The request of run(opts) sent now, before the container is frozen, and
  // CRIU's notifications served until its "pre-dump", left unanswered:
  // CRIU has then read the request and set itself up (options, config
  // file, its kernel cache, the images dir, the parent link: 38-54 ms of a
  // TCG guest's frozen window otherwise; runtime/migrate/README.md) and
  // waits before it looks at any task. True with CRIU waiting there; false,
  // and the child gone, when the request does not fit it (as run()).
  // Throws as criu_dump does (the child is gone then), and Error
  // (Cause::Invalid) when the child was used already.
  bool send_ahead(const DumpOptions& opts);
  // The waiting criu's pid; -1 once run.
  pid_t pid() const;

 private:
  class Session;
  Setup setup_;
  std::vector<std::pair<dev_t, ino_t>> namespaces_;
  std::string parked_key_;  // send_ahead()'s request, CRIU waiting at pre-dump
  std::unique_ptr<Session> session_;
  std::unique_ptr<Session> answered_;  // run's child, exiting
};

// The most telling lines of a CRIU log: its "Error" lines (last max_lines of
// them), else its last max_lines lines; joined with "; " on one line.
std::string criu_log_tail(std::string_view log, size_t max_lines = 3);

}  // namespace crx::checkpoint
