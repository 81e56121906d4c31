// The memory of a frozen container's tasks as the page filter reads it
// when the MRs' write logs say what the device wrote since the first
// pre-copy round (rdma/mr_writes.hpp): only those pages are read and
// compared; for every other page CRIU's "unchanged" stands, as it does in
// a container without verbs objects (the soft-dirty bits catch the CPU's
// writes; the device's writes are in the logs).
#pragma once
#include <cstdint>
#include <unordered_map>

#include "migrate/task_memory.hpp"
#include "rdma/mr_writes.hpp"

namespace crx::migrate {

class WrittenTaskMemory : public TaskMemory {
 public:
  // written: per task (pid in the container's namespace) the pages the
  // device wrote; inner reads them and outlives this.
  WrittenTaskMemory(TaskMemory& inner, std::unordered_map<uint64_t, rdma::PageRanges> written)
      : inner_(inner), written_(std::move(written)) {}
  // A range the device wrote all of is read; one it wrote none of is
  // CRIU's (false); one it wrote part of is false too, and the filter
  // then asks page by page.
  bool read(uint64_t vpid, uint64_t vaddr, void* buf, size_t len) override;

 private:
  TaskMemory& inner_;
  std::unordered_map<uint64_t, rdma::PageRanges> written_;
};

}  // namespace crx::migrate
