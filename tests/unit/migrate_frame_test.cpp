#include <gtest/gtest.h>
#include <sys/socket.h>

#include <chrono>
#include <string>
#include <thread>

#include "common/error.hpp"
#include "migrate/frame.hpp"

namespace {

using crx::migrate::FrameConn;
using crx::migrate::FrameType;

struct Pair {
  FrameConn a;
  FrameConn b;
};

// Two FrameConns over a stream socketpair, plus a raw fd to b for forging.
Pair make_pair(int* raw_to_b = nullptr) {
  int sv[2];
  EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
  if (raw_to_b) *raw_to_b = sv[0];
  return Pair{FrameConn(crx::UniqueFd(sv[0]), "a"), FrameConn(crx::UniqueFd(sv[1]), "b")};
}

void raw_write(int fd, const std::string& bytes) {
  ASSERT_EQ(::send(fd, bytes.data(), bytes.size(), 0), static_cast<ssize_t>(bytes.size()));
}

std::string error_of(FrameConn& c) {
  try {
    c.receive();
  } catch (const crx::Error& e) {
    return e.what();
  }
  return "no error";
}

TEST(MigrateFrame, RoundTripsTypeAndPayloadIncludingEmptyAndBinary) {
  auto p = make_pair();
  std::string binary("\0\x01\xff payload", 11);
  p.a.send(FrameType::Manifest, "{\"id\":\"c1\"}");
  p.a.send(FrameType::DumpDone);
  p.a.send(FrameType::ImageData, binary);
  auto f1 = p.b.receive();
  EXPECT_EQ(f1.type, FrameType::Manifest);
  EXPECT_EQ(f1.payload, "{\"id\":\"c1\"}");
  auto f2 = p.b.receive();
  EXPECT_EQ(f2.type, FrameType::DumpDone);
  EXPECT_TRUE(f2.payload.empty());
  EXPECT_EQ(p.b.receive().payload, binary);
  EXPECT_EQ(p.a.bytes_sent(), p.b.bytes_received());
}

TEST(MigrateFrame, OversizedFrameIsRefusedBeforeItsPayload) {
  auto p = make_pair();
  p.b.set_max_frame(16);
  p.a.send(FrameType::Manifest, std::string(17, 'x'));
  EXPECT_NE(error_of(p.b).find("oversized frame from b: 17 bytes, limit 16"), std::string::npos);
  // Only the header was consumed.
  EXPECT_EQ(p.b.bytes_received(), crx::migrate::kFrameHeaderSize);
}

TEST(MigrateFrame, BadMagicIsCorrupt) {
  int raw;
  auto p = make_pair(&raw);
  raw_write(raw, "GET / HTTP/1.1\r\n\r\n");
  EXPECT_NE(error_of(p.b).find("bad magic"), std::string::npos);
}

TEST(MigrateFrame, ChecksumMismatchIsCorrupt) {
  int raw;
  auto p = make_pair(&raw);
  std::string bytes = crx::migrate::encode_frame(FrameType::Manifest, "hello");
  bytes.back() ^= 1;  // flip a payload bit
  raw_write(raw, bytes);
  EXPECT_NE(error_of(p.b).find("checksum mismatch in manifest frame"), std::string::npos);
}

TEST(MigrateFrame, UnknownTypeAndReservedBitsAreCorrupt) {
  int raw;
  auto p = make_pair(&raw);
  std::string bytes = crx::migrate::encode_frame(FrameType::Manifest, "");
  bytes[5] = static_cast<char>(200);
  raw_write(raw, bytes);
  EXPECT_NE(error_of(p.b).find("unknown type 200"), std::string::npos);

  auto q = make_pair(&raw);
  bytes = crx::migrate::encode_frame(FrameType::Manifest, "");
  bytes[7] = 1;
  raw_write(raw, bytes);
  EXPECT_NE(error_of(q.b).find("reserved bits"), std::string::npos);
}

TEST(MigrateFrame, WrongVersionNamesBothVersions) {
  int raw;
  auto p = make_pair(&raw);
  std::string bytes = crx::migrate::encode_frame(FrameType::Manifest, "");
  bytes[4] = 9;
  raw_write(raw, bytes);
  EXPECT_NE(error_of(p.b).find("protocol version 9, this crx speaks 1"), std::string::npos);
}

TEST(MigrateFrame, TruncatedFrameAndCleanCloseAreDistinguished) {
  int raw;
  auto p = make_pair(&raw);
  std::string bytes = crx::migrate::encode_frame(FrameType::Manifest, "0123456789");
  raw_write(raw, bytes.substr(0, bytes.size() - 3));
  p.a.shutdown();
  EXPECT_NE(error_of(p.b).find("in the middle of a frame"), std::string::npos);

  auto q = make_pair();
  q.a.shutdown();
  EXPECT_EQ(error_of(q.b), "b closed the connection");
}

TEST(MigrateFrame, ReceiveTimesOut) {
  auto p = make_pair();
  p.b.set_timeout(std::chrono::milliseconds(50));
  EXPECT_NE(error_of(p.b).find("timed out"), std::string::npos);
}

TEST(MigrateFrame, ExpectTurnsPeerErrorsIntoExceptionsAndNamesWrongTypes) {
  auto p = make_pair();
  p.a.send(FrameType::Error, "restore failed: no space");
  try {
    p.b.expect(FrameType::RestoreOk);
    FAIL() << "expected an error";
  } catch (const crx::Error& e) {
    EXPECT_EQ(std::string(e.what()), "b: restore failed: no space");
  }
  p.a.send(FrameType::Commit);
  try {
    p.b.expect(FrameType::RestoreOk);
    FAIL() << "expected an error";
  } catch (const crx::Error& e) {
    EXPECT_EQ(std::string(e.what()), "unexpected commit frame from b, expected restore-ok");
  }
}

// Over a SOCK_SEQPACKET pair every write is a message of its own: what
// one recv() returns is what one write sent (under TLS, one record).
TEST(MigrateFrame, ASmallFrameLeavesInOneWriteALargeOneInTwo) {
  int sv[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv), 0);
  crx::UniqueFd raw(sv[1]);
  FrameConn a(crx::UniqueFd(sv[0]), "a");
  const size_t header = crx::migrate::kFrameHeaderSize;
  std::string buf(crx::migrate::kOneWriteFrame + 2 * header, '\0');
  auto next_write = [&] { return ::recv(raw.get(), buf.data(), buf.size(), 0); };

  a.send(FrameType::ImageClose, std::string(300, 'x'));
  EXPECT_EQ(next_write(), static_cast<ssize_t>(header + 300));
  a.send(FrameType::Commit);
  EXPECT_EQ(next_write(), static_cast<ssize_t>(header));
  a.send(FrameType::ImageData, std::string(crx::migrate::kOneWriteFrame, 'y'));
  EXPECT_EQ(next_write(), static_cast<ssize_t>(header + crx::migrate::kOneWriteFrame));

  a.send(FrameType::ImageData, std::string(crx::migrate::kOneWriteFrame + 1, 'z'));
  EXPECT_EQ(next_write(), static_cast<ssize_t>(header));
  EXPECT_EQ(next_write(), static_cast<ssize_t>(crx::migrate::kOneWriteFrame + 1));
}

TEST(MigrateFrame, Crc32MatchesTheStandardCheckValue) {
  EXPECT_EQ(crx::migrate::crc32("123456789"), 0xCBF43926u);
}

}  // namespace
