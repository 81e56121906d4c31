// What the device wrote into a container's MRs since the first pre-copy
// round (rxe-patches 0028, RXE_MIGR_METHOD_MR_WRITES): the final dump
// then compares with the destination only the MR pages CRIU finds
// unchanged that the device wrote, instead of every such page
// (runtime/migrate/README.md, "Pages the destination has already").
//
// The kernel keeps a bit per page of each user MR, set after its write.
// crx clears them before CRIU's first pre-dump reads the memory and reads
// them once the QPs are stopped in the frozen window. What the bits can
// no longer tell makes the answer "unknown" (check every page):
// - an MR deregistered with bits set took them along. The device counts
//   such MRs (also those of a context that was closed), so the count must
//   be the one at the start. Only an MR answers with it: a device that
//   none of the container's MRs is on, at the start or at the end, cannot
//   be vouched for;
// - a context that two processes share (whose memory holds its MRs?).
// An MR registered after the start logs from its registration, which is
// all the device can have written into it since.
#pragma once
#include <sys/types.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace crx::rdma {

// One MR's log: bit i of bits[i / 64] is the page at addr + i * 4096.
struct MrWrites {
  uint64_t addr = 0;
  uint64_t pages = 0;
  std::vector<uint64_t> bits;
};

// One verbs context's MRs, as read from one process's copy of its fd.
struct ContextWrites {
  pid_t pid = 0;         // the process whose fd it was (host pid)
  std::string device;    // its ibdev, e.g. "rxe0"
  uint64_t context = 0;  // the kernel's serial of the context (0: no MR to ask)
  // The device's count of MRs deregistered with bits set, as the
  // context's first and last MR answered (it may grow in between).
  uint64_t lost_min = 0, lost_max = 0;
  std::vector<MrWrites> mrs;
};

// Page-aligned address ranges [first, second), sorted and disjoint.
using PageRanges = std::vector<std::pair<uint64_t, uint64_t>>;

// Each device's count of lost logs when the container's logs were cleared.
class WriteBaseline {
 public:
  explicit WriteBaseline(const std::vector<ContextWrites>& cleared);
  // Per host pid, the pages written since, given the logs read now;
  // nullopt when they cannot tell (above).
  std::optional<std::map<pid_t, PageRanges>> written_since(
      const std::vector<ContextWrites>& now) const;

 private:
  // device -> lost at the start; nullopt: the container had contexts on
  // it but no MR that could say
  std::map<std::string, std::optional<uint64_t>> lost_;
};

// The pages whose bits are set, merged into ranges.
PageRanges ranges_of(const MrWrites& mr);
// Union of sorted, disjoint range lists.
PageRanges merge(const PageRanges& a, const PageRanges& b);
// Whether every page of [addr, addr + len) is in ranges.
bool covers(const PageRanges& ranges, uint64_t addr, uint64_t len);

}  // namespace crx::rdma
