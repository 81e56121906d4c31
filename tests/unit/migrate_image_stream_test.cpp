#include <gtest/gtest.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>  // mkdtemp
#include <string>
#include <thread>
#include <utility>

#include "common/fs.hpp"
#include "migrate/frame.hpp"
#include "migrate/image_stream.hpp"

namespace {

using crx::migrate::FrameConn;
using crx::migrate::FrameType;
using crx::migrate::ImageSink;
using crx::migrate::ImageStreamer;
using crx::migrate::kImageChunk;
using crx::migrate::kStreamAtCloseBytes;

struct Dirs {
  std::string root;
  Dirs() {
    char t[] = "/tmp/crx-image-stream-XXXXXX";
    root = ::mkdtemp(t);
  }
  ~Dirs() { crx::remove_tree(root); }
};

std::string pattern(size_t n, char seed) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; i++) s[i] = static_cast<char>(seed + i * 7 % 251);
  return s;
}

// Files of every size class the streamer reads differently (empty, under
// its smallest buffer, one buffer, more than the largest) arrive whole.
TEST(MigrateImageStream, FilesOfEverySizeArriveWhole) {
  Dirs d;
  const std::string src = d.root + "/src", dst = d.root + "/dst";
  crx::mkdir_p(src, 0700);
  crx::mkdir_p(dst, 0700);
  const std::pair<const char*, size_t> files[] = {
      {"empty.img", 0},   {"small.img", 300},          {"page.img", 4096},
      {"odd.img", 4097},  {"chunk.img", kImageChunk},  {"big.img", 2 * kImageChunk + 123}};
  int sv[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
  FrameConn out(crx::UniqueFd(sv[0]), "out"), in(crx::UniqueFd(sv[1]), "in");
  ImageStreamer streamer(out, src, "7");
  streamer.start();
  char seed = 'a';
  for (auto [name, size] : files) crx::write_file(src + "/" + name, pattern(size, seed++));
  uint64_t total = 0;
  std::thread sender([&] {
    total = streamer.finish();
    out.send(FrameType::RoundDone);
  });
  ImageSink sink(dst, 16 * kImageChunk);
  for (;;) {
    auto f = in.receive();
    if (f.type == FrameType::RoundDone) break;
    ASSERT_TRUE(sink.handle(f));
  }
  sender.join();
  seed = 'a';
  uint64_t expected = 0;
  for (auto [name, size] : files) {
    EXPECT_EQ(crx::read_file(dst + "/7/" + name), pattern(size, seed++)) << name;
    expected += size;
  }
  EXPECT_EQ(total, expected);
  EXPECT_EQ(sink.bytes(), expected);
}

// The next message on a SOCK_SEQPACKET end (one write of the sender), or
// -1 when none comes within `ms`.
ssize_t next_write(int fd, std::string& buf, int ms) {
  struct pollfd p{fd, POLLIN, 0};
  if (::poll(&p, 1, ms) != 1) return -1;
  return ::recv(fd, buf.data(), buf.size(), 0);
}

// A large image leaves as soon as it is closed, while the dump goes on;
// the small ones wait for finish() and then leave together, in one write
// (one TLS record under TLS instead of two per file).
TEST(MigrateImageStream, SmallFilesWaitForTheSweepAndLeaveInOneWrite) {
  Dirs d;
  const std::string src = d.root + "/src";
  crx::mkdir_p(src, 0700);
  int sv[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
  crx::UniqueFd raw(sv[1]);
  int size = 4 << 20;
  ASSERT_EQ(::setsockopt(sv[0], SOL_SOCKET, SO_SNDBUF, &size, sizeof size), 0);
  FrameConn out(crx::UniqueFd(sv[0]), "out");
  ImageStreamer streamer(out, src, "3");
  streamer.start();
  const char* small[] = {"core-1.img", "mm-1.img", "inventory.img", "empty.img"};
  const size_t small_size[] = {300, 1200, 40, 0};
  for (size_t i = 0; i < 4; ++i) crx::write_file(src + "/" + small[i], pattern(small_size[i], 'k'));
  crx::write_file(src + "/big.img", pattern(kStreamAtCloseBytes, 'b'));
  std::string buf(2 * kStreamAtCloseBytes, '\0');
  // big.img: its data frame (header, then payload) and its close frame.
  const size_t header = crx::migrate::kFrameHeaderSize;
  EXPECT_EQ(next_write(raw.get(), buf, 5000), static_cast<ssize_t>(header));
  const std::string big = pattern(kStreamAtCloseBytes, 'b');
  EXPECT_EQ(next_write(raw.get(), buf, 5000),
            static_cast<ssize_t>(crx::migrate::encode_image_data("3/big.img", 0, big).size()));
  EXPECT_EQ(next_write(raw.get(), buf, 5000),
            static_cast<ssize_t>(header + crx::migrate::encode_image_close("3/big.img", 0).size()));
  EXPECT_EQ(next_write(raw.get(), buf, 300), -1) << "a small image left before the sweep";
  EXPECT_EQ(streamer.finish(), kStreamAtCloseBytes + 300 + 1200 + 40);
  size_t expected = 0;
  for (size_t i = 0; i < 4; ++i) {
    const std::string name = std::string("3/") + small[i];
    const std::string data = pattern(small_size[i], 'k');
    if (!data.empty()) expected += header + crx::migrate::encode_image_data(name, 0, data).size();
    expected += header + crx::migrate::encode_image_close(name, small_size[i]).size();
  }
  EXPECT_EQ(next_write(raw.get(), buf, 5000), static_cast<ssize_t>(expected));
  EXPECT_EQ(next_write(raw.get(), buf, 100), -1);
}

}  // namespace
