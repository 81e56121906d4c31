// The frozen tasks' memory as the page filter reads it (task_memory.hpp):
// a real child process's pages through process_vm_readv.
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <string>

#include <gtest/gtest.h>

#include "common/error.hpp"
#include "migrate/task_memory.hpp"

namespace {

using crx::migrate::namespace_pids;
using crx::migrate::ProcTaskMemory;

constexpr size_t kPage = 4096;

// A child that holds a copy of two pages of the parent's and waits until
// it is killed.
struct Child {
  pid_t pid = -1;
  char* pages = nullptr;  // the parent's copy: changed after the fork
  Child() {
    void* m = ::mmap(nullptr, 2 * kPage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) throw crx::Error("mmap");
    pages = static_cast<char*>(m);
    std::memset(pages, 'c', kPage);
    std::memset(pages + kPage, 'd', kPage);
    int ready[2];
    if (::pipe(ready) != 0) throw crx::Error("pipe");
    pid = ::fork();
    if (pid == 0) {
      ::close(ready[0]);
      (void)!::write(ready[1], "r", 1);
      for (;;) ::pause();
    }
    ::close(ready[1]);
    char c;
    (void)!::read(ready[0], &c, 1);
    ::close(ready[0]);
    std::memset(pages, 'P', 2 * kPage);  // the child keeps 'c' and 'd'
  }
  void end() {
    if (pid > 0) {
      ::kill(pid, SIGKILL);
      ::waitpid(pid, nullptr, 0);
      pid = -1;
    }
  }
  ~Child() {
    end();
    ::munmap(pages, 2 * kPage);
  }
  uint64_t addr(size_t page) const { return reinterpret_cast<uint64_t>(pages) + page * kPage; }
};

TEST(TaskMemory, NamespacePidsEndWithThePidSeenHere) {
  auto pids = namespace_pids(::getpid());
  ASSERT_FALSE(pids.empty());
  EXPECT_EQ(pids.back(), ::getpid());
}

TEST(TaskMemory, ReadsTheTasksOwnPagesByItsPidInInitsNamespace) {
  Child child;
  // The test runner's own namespace: the child's pid there is its id.
  ProcTaskMemory memory({child.pid}, child.pid);
  EXPECT_EQ(memory.tasks(), 1u);
  std::string buf(2 * kPage, '\0');
  ASSERT_TRUE(memory.read(static_cast<uint64_t>(child.pid), child.addr(0), buf.data(), buf.size()));
  EXPECT_EQ(buf, std::string(kPage, 'c') + std::string(kPage, 'd'));
  ASSERT_TRUE(memory.read(static_cast<uint64_t>(child.pid), child.addr(1), buf.data(), kPage));
  EXPECT_EQ(buf.substr(0, kPage), std::string(kPage, 'd'));
}

TEST(TaskMemory, MemoryThatIsNotThereIsUnreadableNotAnError) {
  Child child;
  ProcTaskMemory memory({child.pid}, child.pid);
  std::string buf(kPage, '\0');
  // Page 0 is never mapped.
  EXPECT_FALSE(memory.read(static_cast<uint64_t>(child.pid), 0, buf.data(), kPage));
}

TEST(TaskMemory, ATaskTheContainerDoesNotHaveIsNotFound) {
  Child child;
  ProcTaskMemory memory({child.pid}, child.pid);
  std::string buf(kPage, '\0');
  try {
    memory.read(static_cast<uint64_t>(child.pid) + 1, child.addr(0), buf.data(), kPage);
    FAIL() << "read a task the container does not have";
  } catch (const crx::Error& e) {
    EXPECT_EQ(e.cause(), crx::Cause::NotFound) << e.what();
  }
}

TEST(TaskMemory, ATaskThatIsGoneFailsWithItsCause) {
  Child child;
  const pid_t pid = child.pid;
  ProcTaskMemory memory({pid}, pid);
  child.end();
  std::string buf(kPage, '\0');
  try {
    memory.read(static_cast<uint64_t>(pid), child.addr(0), buf.data(), kPage);
    FAIL() << "read a task that is gone";
  } catch (const crx::Error& e) {
    EXPECT_EQ(e.sys_errno(), ESRCH) << e.what();
    EXPECT_EQ(e.cause(), crx::Cause::NotFound);
  }
}

}  // namespace
