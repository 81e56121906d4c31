#include "migrate/written_task_memory.hpp"

namespace crx::migrate {

bool WrittenTaskMemory::read(uint64_t vpid, uint64_t vaddr, void* buf, size_t len) {
  auto it = written_.find(vpid);
  if (it == written_.end() || !rdma::covers(it->second, vaddr, len)) return false;
  return inner_.read(vpid, vaddr, buf, len);
}

}  // namespace crx::migrate
