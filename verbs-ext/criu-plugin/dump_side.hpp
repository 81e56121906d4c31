// The dump half of the plugin, in CRIU's dumping process.
//
// DUMP_EXT_FILE hands the plugin a copy of every fd CRIU does not know.
// A uverbs fd: its context is dumped at once (ibv_dump_context stops every
// QP: partners get NAK_STOPPED and pause), before CRIU dumps the process's
// memory, so no RDMA write or receive changes that memory afterwards. An
// [infinibandevent] fd: the kernel tells which context's async fd or
// completion channel it is (IDENTIFY_FD on a context dumped already; one
// seen before its context waits for it).
#pragma once
#include <sys/stat.h>

#include <map>
#include <string>
#include <vector>

#include "image.hpp"

namespace crx::verbs_plugin {

class Dumper {
 public:
  // HANDLE_DEVICE_VMA: 0 claims a uverbs mapping (CRIU then keeps its
  // metadata, not its pages), -ENOTSUP for any other device.
  int handle_device_vma(const struct stat& st);
  // DUMP_EXT_FILE: 0, -ENOTSUP (not a verbs fd) or -errno.
  int dump_file(int fd, uint32_t id);
  // End of the dump: the stats file; a failed dump resumes the QPs it
  // stopped (the process runs on). CRIU's ret: 0 on success.
  void finish(int ret);

 private:
  struct Context {
    uint32_t id;
    int fd;  // our copy, for IDENTIFY_FD and for resuming on failure
  };
  struct PendingEvent {
    uint32_t id;
    int fd;
  };
  int dump_context(int fd, uint32_t id);
  // 1 identified and written, 0 not a file of a known context, -errno
  int identify_event(int fd, uint32_t id);
  void write_stats();

  std::vector<Context> contexts_;
  std::vector<PendingEvent> pending_;
  std::map<std::string, uint64_t> objects_;
  uint64_t mr_bytes_ = 0;
  // QPs whose responder was in the middle of a multi-packet receive: its
  // position in the message moves with the QP (rxe-patches 0007/0010)
  uint64_t receives_in_progress_ = 0;
  // RDMA READs and atomics the responders had accepted, carried so that a
  // partner's retry of one is answered after the restore
  uint64_t responder_resources_ = 0;
  // completions waiting in the CQs (their windows: cq_window.hpp)
  uint64_t completions_ = 0;
  uint64_t image_bytes_ = 0;  // the context images as written
  double dump_ms_ = 0;
};

}  // namespace crx::verbs_plugin
