#include "migrate/image_stream.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <memory>
#include <utility>
#include <vector>

#include "common/error.hpp"
#include "common/retry_eintr.hpp"

namespace crx::migrate {
namespace {

void put_u16(std::string& out, uint16_t v) {
  out.push_back(static_cast<char>(v >> 8));
  out.push_back(static_cast<char>(v));
}

void put_u64(std::string& out, uint64_t v) {
  for (int i = 7; i >= 0; --i) out.push_back(static_cast<char>(v >> (8 * i)));
}

struct Reader {
  std::string_view in;
  uint64_t u(int bytes) {
    if (in.size() < static_cast<size_t>(bytes)) throw Error("corrupt image frame: truncated");
    uint64_t v = 0;
    for (int i = 0; i < bytes; ++i) v = v << 8 | static_cast<unsigned char>(in[i]);
    in.remove_prefix(bytes);
    return v;
  }
  std::string str(size_t n) {
    if (in.size() < n) throw Error("corrupt image frame: truncated");
    std::string s(in.substr(0, n));
    in.remove_prefix(n);
    return s;
  }
  std::string name() { return str(u(2)); }
};

bool safe_component(std::string_view c) {
  if (c.empty() || c.size() > 255 || c == "." || c == "..") return false;
  for (char ch : c) {
    if (ch == '/' || ch == '\0') return false;
  }
  return true;
}

void write_all_at(int fd, std::string_view data, uint64_t offset, const std::string& path) {
  while (!data.empty()) {
    auto at = static_cast<off_t>(offset);
    ssize_t n = retry_eintr([&] { return ::pwrite(fd, data.data(), data.size(), at); });
    if (n < 0) throw_errno("write image " + path);
    data.remove_prefix(static_cast<size_t>(n));
    offset += static_cast<uint64_t>(n);
  }
}

}  // namespace

void check_image_name(const std::string& name) {
  size_t slash = name.find('/');
  if (slash == std::string::npos || !safe_component(std::string_view(name).substr(0, slash)) ||
      !safe_component(std::string_view(name).substr(slash + 1))) {
    throw Error("refusing image name \"" + name + "\" (expected <round>/<file>)");
  }
}

std::string encode_image_data(const std::string& name, uint64_t offset, std::string_view data) {
  std::string out;
  put_u16(out, static_cast<uint16_t>(name.size()));
  out += name;
  put_u64(out, offset);
  out.append(data);
  return out;
}

std::string encode_image_close(const std::string& name, uint64_t size) {
  std::string out;
  put_u16(out, static_cast<uint16_t>(name.size()));
  out += name;
  put_u64(out, size);
  return out;
}

std::string encode_image_symlink(const std::string& name, const std::string& target) {
  std::string out;
  put_u16(out, static_cast<uint16_t>(name.size()));
  out += name;
  out += target;
  return out;
}

// ---- sender ----

ImageStreamer::ImageStreamer(FrameConn& conn, std::string dir, std::string wire_dir)
    : conn_(conn), dir_(std::move(dir)), wire_dir_(std::move(wire_dir)) {}

ImageStreamer::~ImageStreamer() {
  if (thread_.joinable()) {
    uint64_t one = 1;
    (void)!::write(stop_.get(), &one, sizeof one);
    thread_.join();
  }
}

void ImageStreamer::start() {
  inotify_.reset(::inotify_init1(IN_CLOEXEC | IN_NONBLOCK));
  if (!inotify_) throw_errno("inotify_init1");
  if (::inotify_add_watch(inotify_.get(), dir_.c_str(), IN_CLOSE_WRITE | IN_MOVED_TO) < 0)
    throw_errno("inotify watch " + dir_);
  stop_.reset(::eventfd(0, EFD_CLOEXEC));
  if (!stop_) throw_errno("eventfd");
  thread_ = std::thread([this] {
    try {
      watch_loop();
    } catch (...) {
      error_ = std::current_exception();
    }
  });
}

void ImageStreamer::watch_loop() {
  alignas(struct inotify_event) char buf[16384];
  for (;;) {
    struct pollfd p[2] = {{inotify_.get(), POLLIN, 0}, {stop_.get(), POLLIN, 0}};
    if (retry_eintr([&] { return ::poll(p, 2, -1); }) < 0) throw_errno("poll inotify");
    if (p[0].revents & POLLIN) {
      ssize_t n = retry_eintr([&] { return ::read(inotify_.get(), buf, sizeof buf); });
      if (n < 0 && errno != EAGAIN) throw_errno("read inotify");
      for (ssize_t off = 0; n > 0 && off < n;) {
        auto* ev = reinterpret_cast<struct inotify_event*>(buf + off);
        if (ev->len > 0 && !(ev->mask & IN_ISDIR)) send_file(ev->name, nullptr);
        off += static_cast<ssize_t>(sizeof(struct inotify_event) + ev->len);
      }
    }
    if (p[1].revents & POLLIN) return;
  }
}

void ImageStreamer::send_file(const std::string& file, std::string* batch) {
  std::string path = dir_ + "/" + file;
  std::string name = wire_dir_ + "/" + file;
  struct stat st{};
  if (::lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return;  // renamed away meanwhile
    throw_errno("stat image " + path);
  }
  int64_t mtime = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
  auto it = sent_.find(file);
  if (it != sent_.end() && it->second.size == st.st_size && it->second.mtime_ns == mtime) return;
  const bool small =
      !S_ISREG(st.st_mode) || static_cast<uint64_t>(st.st_size) < kStreamAtCloseBytes;
  if (small && !batch) return;  // the sweep's, with the other small ones
  auto send = [&](FrameType type, const std::string& payload) {
    if (small) {
      *batch += encode_frame(type, payload);
    } else {
      conn_.send(type, payload);
    }
  };
  if (S_ISLNK(st.st_mode)) {
    char target[4096];
    ssize_t n = ::readlink(path.c_str(), target, sizeof target - 1);
    if (n < 0) throw_errno("readlink " + path);
    send(FrameType::ImageSymlink, encode_image_symlink(name, std::string(target, n)));
  } else if (S_ISREG(st.st_mode)) {
    UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
    if (!fd) throw_errno("open image " + path);
    // Sized to the file, and not zeroed: most images are a few hundred
    // bytes, and a 1 MiB buffer zeroed for each (fresh pages from the
    // kernel every time) cost ~5-9 ms a file in a guest, on the vCPU the
    // frozen window's CRIU runs on. A file grown since the stat is read in
    // more chunks.
    const size_t cap = static_cast<size_t>(
        std::clamp<uint64_t>(static_cast<uint64_t>(st.st_size), 4096, kImageChunk));
    auto chunk = std::make_unique_for_overwrite<char[]>(cap);
    uint64_t offset = 0;
    for (;;) {
      auto at = static_cast<off_t>(offset);
      ssize_t n = retry_eintr([&] { return ::pread(fd.get(), chunk.get(), cap, at); });
      if (n < 0) throw_errno("read image " + path);
      if (n == 0) break;
      send(FrameType::ImageData, encode_image_data(name, offset, std::string_view(chunk.get(), n)));
      offset += static_cast<uint64_t>(n);
    }
    send(FrameType::ImageClose, encode_image_close(name, offset));
    bytes_ += offset;
  } else {
    return;  // CRIU writes nothing else into an images dir
  }
  sent_[file] = Sent{st.st_size, mtime};
}

void ImageStreamer::sweep() {
  DIR* d = ::opendir(dir_.c_str());
  if (!d) throw_errno("open images dir " + dir_);
  std::vector<std::string> names;
  while (struct dirent* e = ::readdir(d)) {
    std::string n = e->d_name;
    if (n != "." && n != "..") names.push_back(n);
  }
  ::closedir(d);
  std::string batch;
  for (const auto& n : names) {
    send_file(n, &batch);
    if (batch.size() >= kImageBatchBytes) conn_.send_encoded(std::exchange(batch, {}));
  }
  if (!batch.empty()) conn_.send_encoded(batch);
}

uint64_t ImageStreamer::finish() {
  if (thread_.joinable()) {
    uint64_t one = 1;
    (void)!::write(stop_.get(), &one, sizeof one);
    thread_.join();
  }
  if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
  sweep();
  return bytes_;
}

// ---- receiver ----

ImageSink::ImageSink(std::string root, uint64_t max_bytes)
    : root_(std::move(root)), max_bytes_(max_bytes) {}

std::string ImageSink::path_of(const std::string& name, bool make_dir) {
  check_image_name(name);
  if (make_dir) {
    std::string dir = root_ + "/" + name.substr(0, name.find('/'));
    if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) throw_errno("mkdir " + dir);
  }
  return root_ + "/" + name;
}

bool ImageSink::handle(const Frame& f) {
  Reader r{f.payload};
  switch (f.type) {
    case FrameType::ImageData: {
      std::string name = r.name();
      uint64_t offset = r.u(8);
      std::string_view data = r.in;
      // The sender writes each file front to back: data anywhere else
      // (a hole, a rewrite) is refused, so the limit below counts every
      // byte the file can take on disk.
      auto next = next_offset_.find(name);
      uint64_t expected = (offset == 0 || next == next_offset_.end()) ? 0 : next->second;
      if (offset != expected) {
        throw Error("image " + name + ": data at offset " + std::to_string(offset) +
                        ", expected " + std::to_string(expected) + " (images are sent in order)",
                    Cause::Invalid);
      }
      if (bytes_ + data.size() > max_bytes_) {
        throw Error("images exceed the receiver's limit of " + std::to_string(max_bytes_) +
                    " bytes");
      }
      std::string path = path_of(name, true);
      int flags = O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW | (offset == 0 ? O_TRUNC : 0);
      UniqueFd fd(::open(path.c_str(), flags, 0600));
      if (!fd) throw_errno("open image " + path);
      write_all_at(fd.get(), data, offset, path);
      bytes_ += data.size();
      next_offset_[name] = offset + data.size();
      return true;
    }
    case FrameType::ImageClose: {
      std::string name = r.name();
      uint64_t size = r.u(8);
      std::string path = path_of(name, true);
      if (size == 0) {
        UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600));
        if (!fd) throw_errno("create image " + path);
      }
      struct stat st{};
      if (::stat(path.c_str(), &st) != 0) throw_errno("stat image " + path);
      if (static_cast<uint64_t>(st.st_size) != size) {
        throw Error("image " + name + " arrived with " + std::to_string(st.st_size) +
                    " bytes, sender wrote " + std::to_string(size));
      }
      ++files_closed_;
      return true;
    }
    case FrameType::ImageSymlink: {
      std::string name = r.name();
      std::string target(r.in);
      // Only CRIU's "parent" -> "../<round>" links, which stay inside the tree.
      if (target.rfind("../", 0) != 0 || !safe_component(std::string_view(target).substr(3))) {
        throw Error("refusing image symlink " + name + " -> " + target);
      }
      std::string path = path_of(name, true);
      char cur[4096];
      ssize_t n = ::readlink(path.c_str(), cur, sizeof cur);
      if (n >= 0 && std::string(cur, n) == target) return true;
      ::unlink(path.c_str());
      if (::symlink(target.c_str(), path.c_str()) != 0) throw_errno("symlink " + path);
      return true;
    }
    default:
      return false;
  }
}

}  // namespace crx::migrate
