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
#include <string>
#include <string_view>

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

CriuVersion criu_version();
// CRIU's CHECK request; false (never throws for a failed check).
bool criu_check();
void criu_dump(const DumpOptions& opts, const NotifyHandler& notify = {});
// A memory-only round; with opts.page_server the pages go there.
void criu_pre_dump(const DumpOptions& opts, const NotifyHandler& notify = {});
// Returns the pid of the restored init (our child with rst_sibling).
pid_t criu_restore(const RestoreOptions& opts, const NotifyHandler& notify = {});

// The most telling lines of a CRIU log: its "Error" lines (last max_lines of
// them), else its last max_lines lines; joined with "; " on one line.
std::string criu_log_tail(std::string_view log, size_t max_lines = 3);

}  // namespace crx::checkpoint
