// What the migration sides and checkpoint need from the RDMA part: stop a
// container's QPs at the freeze and resume the QPs a dump left Stopped. An interface so
// that the rollback paths are unit-tested with a fake (no RDMA on CI).
#pragma once
#include <string>

namespace crx::rdma {

class StoppedQps {
 public:
  virtual ~StoppedQps() = default;
  // Returns the number of QPs resumed (0 without verbs contexts); throws
  // RdmaError when a context refuses.
  virtual int resume_stopped(const std::string& container_id) = 0;
  // Stops every QP of the container's processes that is not stopped yet, as
  // a dump would: called right after the freeze, so that no partner spends
  // RNR retries on a frozen receiver until CRIU's dump stops the QPs.
  // Returns how many; throws RdmaError when a context refuses.
  virtual int stop_all(const std::string& container_id) = 0;
};

}  // namespace crx::rdma
