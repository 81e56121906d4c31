// CRIU's non-page images travel over the control connection: the sender
// watches the (tmpfs) images dir with inotify and ships each large file
// as soon as CRIU closes it, so that its transfer overlaps the dump; a
// final sweep after the dump ships the small files, all of them in one
// write, and whatever is left or changed. The receiver writes them into
// its RAM (tmpfs) images dir.
//
// Names on the wire are "<round>/<file>": one directory level, no "..",
// no hidden tricks — the receiver refuses anything else.
#pragma once
#include <sys/types.h>

#include <atomic>
#include <cstdint>
#include <exception>
#include <map>
#include <string>
#include <thread>

#include "common/unique_fd.hpp"
#include "migrate/frame.hpp"

namespace crx::migrate {

inline constexpr size_t kImageChunk = 1024 * 1024;
// Files below this size wait for the final sweep. A final dump writes
// ~20 of them, a few KiB in all, inside the frozen window: shipped one by
// one, each was two TLS records and two sends, on the vCPU CRIU dumps on
// (runtime/migrate/README.md, "Small images in one write").
inline constexpr size_t kStreamAtCloseBytes = 64 * 1024;
// The sweep's batch is sent once it holds this much.
inline constexpr size_t kImageBatchBytes = 256 * 1024;

// Throws Error unless name is "<component>/<component>" with safe parts.
void check_image_name(const std::string& name);

class ImageStreamer {
 public:
  // Ships files of `dir` as "<wire_dir>/<file>".
  ImageStreamer(FrameConn& conn, std::string dir, std::string wire_dir);
  ~ImageStreamer();
  ImageStreamer(const ImageStreamer&) = delete;
  ImageStreamer& operator=(const ImageStreamer&) = delete;

  // Starts the watcher thread (the caller must not send on conn until
  // finish()).
  void start();
  // Stops watching, ships what is left; rethrows a watcher error. Returns
  // the image bytes shipped in total.
  uint64_t finish();

 private:
  void watch_loop();
  void sweep();
  // Ships the file when it is new or changed: a large one on its own; a
  // small one into *batch (the sweep), or not at all without one (the
  // watcher leaves it to the sweep).
  void send_file(const std::string& name, std::string* batch);

  struct Sent {
    off_t size;
    int64_t mtime_ns;
  };
  FrameConn& conn_;
  std::string dir_;
  std::string wire_dir_;
  UniqueFd inotify_;
  UniqueFd stop_;
  std::thread thread_;
  std::exception_ptr error_;
  std::map<std::string, Sent> sent_;
  uint64_t bytes_ = 0;
};

class ImageSink {
 public:
  // Files land under root/<round>/<file>; at most max_bytes in total.
  ImageSink(std::string root, uint64_t max_bytes);
  // Handles ImageData/ImageClose/ImageSymlink; false for other frames.
  bool handle(const Frame& frame);
  uint64_t bytes() const { return bytes_; }
  int files_closed() const { return files_closed_; }

 private:
  std::string path_of(const std::string& name, bool make_dir);
  std::string root_;
  uint64_t max_bytes_;
  uint64_t bytes_ = 0;
  int files_closed_ = 0;
  // Where each file's next ImageData must start.
  std::map<std::string, uint64_t> next_offset_;
};

// Wire encoding, exposed for tests.
std::string encode_image_data(const std::string& name, uint64_t offset, std::string_view data);
std::string encode_image_close(const std::string& name, uint64_t size);
std::string encode_image_symlink(const std::string& name, const std::string& target);

}  // namespace crx::migrate
