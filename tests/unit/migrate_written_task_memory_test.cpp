// WrittenTaskMemory: only what the device wrote is read.
#include "migrate/written_task_memory.hpp"

#include <gtest/gtest.h>

#include <vector>

namespace {

constexpr uint64_t kPage = 4096;
constexpr uint64_t kA = 0x7f0000000000;

struct CountingMemory : crx::migrate::TaskMemory {
  std::vector<std::pair<uint64_t, size_t>> reads;
  bool read(uint64_t, uint64_t vaddr, void*, size_t len) override {
    reads.emplace_back(vaddr, len);
    return true;
  }
};

TEST(WrittenTaskMemory, ReadsOnlyRangesTheDeviceWroteWhole) {
  CountingMemory inner;
  crx::migrate::WrittenTaskMemory m(inner, {{7, {{kA + kPage, kA + 3 * kPage}}}});
  char buf[3 * kPage];
  EXPECT_TRUE(m.read(7, kA + kPage, buf, 2 * kPage));
  EXPECT_FALSE(m.read(7, kA, buf, 3 * kPage));   // partly: page by page, then
  EXPECT_FALSE(m.read(7, kA, buf, kPage));       // not written: CRIU's word
  EXPECT_FALSE(m.read(8, kA + kPage, buf, kPage));  // a task without writes
  EXPECT_EQ(inner.reads, (std::vector<std::pair<uint64_t, size_t>>{{kA + kPage, 2 * kPage}}));
}

}  // namespace
