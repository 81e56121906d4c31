// The page channel's frames (zero_runs.hpp): what the sender's filter
// writes, and the destination's PageRelay writing CRIU's stream back from
// them, over real sockets.
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <thread>

#include <gtest/gtest.h>
#include <lz4.h>

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
  // An unknown kind, and a compressed frame too short to state its length.
  for (const auto& [f, why] : {std::pair{frame(4, 0), "unknown kind 4"},
                               std::pair{frame(zr::kLz4, 4), "too short to state"}}) {
    char h[zr::kHeaderSize];
    std::memcpy(h, f.data(), sizeof h);
    try {
      zr::parse_header(h);
      FAIL() << "header taken: " << why;
    } catch (const crx::Error& e) {
      EXPECT_EQ(e.cause(), crx::Cause::Invalid);
      EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
    }
  }
}

// A page as a rank's receive slots leave it: a few bytes of data, the
// rest zeros (tests/bench/mpi, Result 24).
std::string sparse_page(int n) {
  std::string p(kPage, '\0');
  const int word = n + 1;  // never a zero page
  std::memcpy(p.data() + 64 * (n % 60), &word, sizeof word);
  return p;
}

// Bytes LZ4 cannot shrink (xorshift).
std::string noise(size_t len, uint64_t seed) {
  std::string s(len, '\0');
  for (size_t i = 0; i < len; i += 8) {
    seed ^= seed << 13;
    seed ^= seed >> 7;
    seed ^= seed << 17;
    std::memcpy(s.data() + i, &seed, std::min<size_t>(8, len - i));
  }
  return s;
}

TEST(ZeroRunsCompressed, ABufferOfSparsePagesGoesAsOneSmallerFrameAndDecodesBack) {
  zr::Encoder e(true, true);
  std::string stream = "hdr1";
  e.bytes("hdr1", 4);
  for (int i = 0; i < 32; i++) {
    e.page(sparse_page(i).data());
    stream += sparse_page(i);
    if (i % 8 == 0) {  // zero pages between them stay counts inside the block
      e.page(page('\0').data());
      stream += page('\0');
    }
  }
  const size_t framed = e.wire().size();
  const std::string& wire = e.seal();
  ASSERT_GE(wire.size(), zr::kHeaderSize);
  uint32_t kind = 0;
  std::memcpy(&kind, wire.data(), 4);
  EXPECT_EQ(kind, zr::kLz4);
  EXPECT_LT(wire.size(), framed / 8);
  EXPECT_EQ(e.compressed_in(), framed);
  EXPECT_EQ(e.compressed_out(), wire.size());
  uint64_t zero_bytes = 0;
  auto [got, error] = decode(wire, &zero_bytes);
  EXPECT_EQ(error, "");
  EXPECT_EQ(got, stream);
  EXPECT_EQ(zero_bytes, 4 * kPage);
}

TEST(ZeroRunsCompressed, WhatLz4CannotShrinkGoesAsItWasAndTheNextBufferIsLeftAlone) {
  zr::Encoder e(true, true);
  const std::string rough = noise(8 * kPage, 42);
  for (size_t off = 0; off < rough.size(); off += kPage) e.page(rough.data() + off);
  const std::string framed = e.wire();
  EXPECT_EQ(e.seal(), framed);  // not shrunk by an eighth: as it was
  e.clear();
  // The next buffer, however sparse, goes as it is (the back-off) ...
  for (int i = 0; i < 8; i++) e.page(sparse_page(i).data());
  const std::string second = e.wire();
  EXPECT_EQ(e.seal(), second);
  e.clear();
  // ... and the one after is compressed again.
  for (int i = 0; i < 8; i++) e.page(sparse_page(i).data());
  const std::string third = e.wire();
  EXPECT_LT(e.seal().size(), third.size());
  EXPECT_EQ(e.compressed_in(), third.size());
  auto [got, error] = decode(framed + second + e.wire());
  EXPECT_EQ(error, "");
  EXPECT_EQ(got, rough + second.substr(zr::kHeaderSize) + third.substr(zr::kHeaderSize));
}

TEST(ZeroRunsCompressed, SmallBuffersAndUnframedOnesAreNeverCompressed) {
  zr::Encoder small(true, true);
  small.bytes(std::string(1000, '\0').data(), 1000);  // a record's headers, say
  const std::string framed = small.wire();
  EXPECT_EQ(small.seal(), framed);
  zr::Encoder unframed(false, true);  // compression needs frames
  unframed.page(sparse_page(1).data());
  EXPECT_EQ(unframed.seal(), sparse_page(1));
}

TEST(ZeroRunsCompressed, BytesAfterASealStartAFrameOfTheirOwn) {
  zr::Encoder e(true, true);
  for (int i = 0; i < 4; i++) e.page(sparse_page(i).data());
  const size_t sealed = e.seal().size();
  e.bytes("tail", 4);
  EXPECT_EQ(e.wire().substr(sealed), frame(zr::kBytes, 4, "tail"));
  auto [got, error] = decode(e.seal());
  EXPECT_EQ(error, "");
  EXPECT_EQ(got, sparse_page(0) + sparse_page(1) + sparse_page(2) + sparse_page(3) + "tail");
}

// A compressed frame around `inner` (LZ4 of it, its length stated).
std::string lz4_frame(const std::string& inner, uint32_t stated) {
  std::string payload(4, '\0');
  std::memcpy(payload.data(), &stated, 4);
  std::string block(inner.size() + inner.size() / 255 + 16, '\0');
  const int n = LZ4_compress_default(inner.data(), block.data(), static_cast<int>(inner.size()),
                                     static_cast<int>(block.size()));
  EXPECT_GT(n, 0);
  return frame(zr::kLz4, static_cast<uint32_t>(4 + n), payload + block.substr(0, n));
}

TEST(ZeroRunsCompressed, TheRelayRefusesABlockThatIsNotWhatItStates) {
  const std::string inner = frame(zr::kBytes, kPage, sparse_page(7));
  {
    auto [got, error] = decode(lz4_frame(inner, static_cast<uint32_t>(inner.size()) + 1));
    EXPECT_EQ(got, "");
    EXPECT_NE(error.find("does not decode to the"), std::string::npos) << error;
  }
  {
    auto [got, error] = decode(lz4_frame(inner, zr::kMaxBytes + 1));
    EXPECT_NE(error.find("more than a frame may hold"), std::string::npos) << error;
  }
  {  // not an LZ4 block at all
    std::string payload(4, '\0');
    const uint32_t stated = 100;
    std::memcpy(payload.data(), &stated, 4);
    auto [got, error] = decode(frame(zr::kLz4, 12, payload + std::string(8, '\xff')));
    EXPECT_NE(error.find("does not decode"), std::string::npos) << error;
  }
}

TEST(ZeroRunsCompressed, TheRelayRefusesWhatABlockHoldsWrongly) {
  const std::string inner = frame(zr::kBytes, kPage, sparse_page(7));
  {  // a compressed frame inside one
    const std::string nested = lz4_frame(inner, static_cast<uint32_t>(inner.size()));
    auto [got, error] = decode(lz4_frame(nested, static_cast<uint32_t>(nested.size())));
    EXPECT_EQ(got, "");
    EXPECT_NE(error.find("holds a compressed frame"), std::string::npos) << error;
  }
  {  // a frame cut short at the block's end
    const std::string cut = inner.substr(0, inner.size() - 1);
    auto [got, error] = decode(lz4_frame(cut, static_cast<uint32_t>(cut.size())));
    EXPECT_EQ(got, "");
    EXPECT_NE(error.find("ends inside a frame"), std::string::npos) << error;
  }
}

}  // namespace
