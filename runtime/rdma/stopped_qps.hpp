// What the migration sides and checkpoint need from the RDMA part: resume
// the QPs a dump left Stopped in a container's processes. An interface so
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
};

}  // namespace crx::rdma
