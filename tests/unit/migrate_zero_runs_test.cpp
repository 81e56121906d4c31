// The page channel's frames (zero_runs.hpp): what the sender's filter
// writes, and the destination's PageRelay writing CRIU's stream back from
// them, over real sockets.
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "common/error.hpp"
#include "common/unique_fd.hpp"
#include "migrate/page_relay.hpp"
#include "migrate/zero_runs.hpp"

namespace {

using crx::UniqueFd;
using crx::migrate::PageRelay;
namespace zr = crx::migrate::zero_runs;

constexpr size_t kPage = 4096;

std::string page(char fill) { return std::string(kPage, fill); }

std::string frame(uint32_t kind, uint32_t len, const std::string& data = {}) {
  std::string f(zr::kHeaderSize, '\0');
  std::memcpy(f.data(), &kind, 4);
  std::memcpy(f.data() + 4, &len, 4);
  return f + data;
}

// What the destination's relay makes of `wire`: everything CRIU's end
// reads until the relay ends, and the relay's error.
std::pair<std::string, std::string> decode(const std::string& wire, uint64_t* zero_bytes = nullptr) {
  int net[2];
  EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, net), 0);
  UniqueFd sender(net[0]);
  PageRelay relay(UniqueFd(net[1]), PageRelay::Mode::Splice, PageRelay::OnEnd::Close,
                  PageRelay::Framing::ZeroRuns);
  UniqueFd criu = relay.take_peer_end();
  std::thread writer([&] {
    size_t off = 0;
    while (off < wire.size()) {
      ssize_t n = ::send(sender.get(), wire.data() + off, wire.size() - off, MSG_NOSIGNAL);
      if (n <= 0) break;
      off += static_cast<size_t>(n);
    }
    ::shutdown(sender.get(), SHUT_WR);
  });
  std::string got;
  char buf[65536];
  for (ssize_t n; (n = ::read(criu.get(), buf, sizeof buf)) > 0;) got.append(buf, static_cast<size_t>(n));
  writer.join();
  criu.reset();  // the page server is done: the relay ends
  relay.join();
  if (zero_bytes) *zero_bytes = relay.zero_bytes();
  return {got, relay.error()};
}

TEST(ZeroRuns, AZeroPageIsOneThatIsAllZeros) {
  std::string p = page('\0');
  EXPECT_TRUE(zr::is_zero_page(p.data()));
  p[kPage - 1] = 1;  // the last byte alone
  EXPECT_FALSE(zr::is_zero_page(p.data()));
  p = page('\0');
  p[0] = 1;
  EXPECT_FALSE(zr::is_zero_page(p.data()));
}

TEST(ZeroRuns, UnframedTheBytesGoAsTheyAre) {
  zr::Encoder e(false);
  e.bytes("head", 4);
  e.page(page('\0').data());
  EXPECT_EQ(e.wire(), "head" + page('\0'));
  EXPECT_EQ(e.zero_pages(), 0u);
}

TEST(ZeroRuns, FramedZeroPagesBecomeOneCountedFrame) {
  zr::Encoder e(true);
  e.bytes("head", 4);
  e.page(page('a').data());
  e.page(page('\0').data());
  e.page(page('\0').data());
  e.bytes("tail", 4);
  EXPECT_EQ(e.wire(), frame(zr::kBytes, 4 + kPage, "head" + page('a')) +
                          frame(zr::kZeros, 2 * kPage) + frame(zr::kBytes, 4, "tail"));
  EXPECT_EQ(e.zero_pages(), 2u);
  // After a flush, a new frame: what was sent is whole.
  e.clear();
  e.bytes("x", 1);
  EXPECT_EQ(e.wire(), frame(zr::kBytes, 1, "x"));
}

TEST(ZeroRuns, TheRelayWritesBackWhatWasFramed) {
  zr::Encoder e(true);
  const std::string stream = "hdr1" + page('a') + page('\0') + page('\0') + page('\0') + "hdr2" +
                             page('\0') + page('b');
  e.bytes("hdr1", 4);
  for (char c : {'a', '\0', '\0', '\0'}) e.page(page(c).data());
  e.bytes("hdr2", 4);
  for (char c : {'\0', 'b'}) e.page(page(c).data());
  EXPECT_LT(e.wire().size(), stream.size() - 3 * kPage);
  uint64_t zero_bytes = 0;
  auto [got, error] = decode(e.wire(), &zero_bytes);
  EXPECT_EQ(error, "");
  EXPECT_EQ(got, stream);
  EXPECT_EQ(zero_bytes, 4 * kPage);
}

TEST(ZeroRuns, AFrameOfUnknownKindEndsTheRelayWithItsKind) {
  auto [got, error] = decode(frame(zr::kBytes, 2, "ok") + frame(7, 0));
  EXPECT_EQ(got, "ok");
  EXPECT_NE(error.find("frame of unknown kind 7"), std::string::npos) << error;
}

TEST(ZeroRuns, AnOversizedFrameEndsTheRelay) {
  auto [got, error] = decode(frame(zr::kZeros, zr::kMaxZeros + 1));
  EXPECT_EQ(got, "");
  EXPECT_NE(error.find("more than its kind allows"), std::string::npos) << error;
}

TEST(ZeroRuns, AChannelThatEndsInsideAFrameIsAnError) {
  auto [got, error] = decode(frame(zr::kBytes, 100, "only ten b"));
  EXPECT_EQ(got, "only ten b");
  EXPECT_NE(error.find("ended inside a frame"), std::string::npos) << error;
}

TEST(ZeroRuns, HeadersAreChecked) {
  char h[zr::kHeaderSize];
  const std::string f = frame(3, 0);
  std::memcpy(h, f.data(), sizeof h);
  try {
    zr::parse_header(h);
    FAIL() << "kind 3 taken";
  } catch (const crx::Error& e) {
    EXPECT_EQ(e.cause(), crx::Cause::Invalid);
  }
}

}  // namespace
