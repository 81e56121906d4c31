// What the migration protocol needs from the machines at both ends. The
// real implementations drive CRIU and the container runtime
// (criu_sides.hpp); unit tests inject fakes to exercise the protocol and
// its rollback without CRIU.
#pragma once
#include <chrono>
#include <functional>
#include <memory>
#include <string>

#include "common/unique_fd.hpp"
#include "migrate/protocol.hpp"

namespace crx::migrate {

// The source container. Calls come in this order: pre_dump* freeze dump,
// then exactly one of destroy (destination confirmed) or resume (anything
// failed) — resume may also come without freeze/dump.
class SourceSide {
 public:
  virtual ~SourceSide() = default;
  // Memory to the connected page channel page_fd, other images into
  // images_dir; the container keeps running. parent: "../<round>" or "".
  virtual void pre_dump(const std::string& images_dir, const std::string& parent, int page_fd) = 0;
  // Freezes the container (cgroup freezer): downtime starts.
  virtual void freeze() = 0;
  // The final dump; the container is left frozen, not killed.
  virtual void dump(const std::string& images_dir, const std::string& parent, int page_fd) = 0;
  // Rollback: the container runs on where it was.
  virtual void resume() = 0;
  // Commit: the destination runs the container; remove the source copy.
  virtual void destroy() = 0;
};

// A running page server for one round; wait() throws when it failed.
class PageSink {
 public:
  virtual ~PageSink() = default;
  virtual void wait(std::chrono::milliseconds timeout) = 0;
  // Why the page stream broke, when the sink knows already ("" else).
  virtual std::string failure() const { return {}; }
};

class DestinationSide {
 public:
  virtual ~DestinationSide() = default;
  // Decides where the bundle comes from; throws Error to refuse (e.g. the
  // id exists here, or the bundle differs and no rootfs will be sent).
  virtual Acceptance accept(const Manifest& m) = 0;
  virtual std::unique_ptr<PageSink> start_page_server(const std::string& round_dir,
                                                      UniqueFd channel) = 0;
  // Restores from images_dir. `hold` is called once the restored tasks are
  // ready to resume; if it throws, the restore is undone and restore()
  // rethrows. Returns the restored init's pid.
  virtual int restore(const std::string& images_dir, const Manifest& m, const Acceptance& a,
                      const std::function<void()>& hold) = 0;
  // Removes whatever restore() left behind after a failure (state, cgroup).
  virtual void discard(const Manifest& m) noexcept = 0;
};

}  // namespace crx::migrate
