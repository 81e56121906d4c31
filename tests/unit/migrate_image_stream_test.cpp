#include <gtest/gtest.h>
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

}  // namespace
