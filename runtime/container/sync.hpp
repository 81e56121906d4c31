// The parent/child channel used while a container is being created: a
// SOCK_SEQPACKET socketpair carrying fixed-size messages.
#pragma once
#include <cstdint>
#include <exception>
#include <string>

#include "common/unique_fd.hpp"

namespace crx::container {

enum class SyncType : uint32_t {
  Continue = 1,     // parent -> child: id maps written, go on (mounts may start)
  CgroupJoined,     // parent -> child: the child is in the container's cgroup
  InitPid,          // child -> parent: value = pid of the real init (after a pid-ns fork)
  RunRuntimeHooks,  // child -> parent: mounts ready, run prestart/createRuntime
  HooksDone,        // parent -> child
  Created,          // child -> parent: ready, waiting on exec.fifo
  Error,            // child -> parent: text = one-line error, value = errno, cause
};

struct SyncMsg {
  SyncType type;
  int32_t value;
  int32_t cause;  // Error: the crx::Cause of the child's error
  char text[2048];
};

class SyncChannel {
 public:
  SyncChannel() = default;
  explicit SyncChannel(UniqueFd fd) : fd_(std::move(fd)) {}
  static std::pair<SyncChannel, SyncChannel> make_pair();

  void send(SyncType type, int32_t value = 0, const std::string& text = "") const;
  // Sends an Error message: e's text, and its errno and cause when it is a
  // crx::Error, so the parent decides on them as the child would.
  void send_error(const std::exception& e) const;
  // Returns false on EOF (the other side is gone).
  bool receive(SyncMsg& msg) const;
  // Receives and checks the type; throws on EOF, Error, or another type.
  SyncMsg expect(SyncType type) const;
  int fd() const { return fd_.get(); }
  // The crx::Error an Error message carries (text, errno and cause).
  [[noreturn]] static void throw_error(const SyncMsg& msg);
  void close() { fd_.reset(); }

 private:
  UniqueFd fd_;
};

}  // namespace crx::container
