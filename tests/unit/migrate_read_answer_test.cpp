// read_answer (migrate/net.hpp): a time-out is silence only when the send
// queue stood still; while the peer still reads what came before the
// question, the answer is waited for.
#include <gtest/gtest.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <optional>
#include <thread>
#include <vector>

#include "common/error.hpp"
#include "common/unique_fd.hpp"
#include "migrate/net.hpp"

namespace {

using crx::Error;
using crx::UniqueFd;
using namespace crx::migrate;
using namespace std::chrono_literals;

// A loopback connection, both ends blocking; `near` reads with a 100 ms
// SO_RCVTIMEO and sends segments of 1 KiB (not loopback's 64 KiB), so
// that a paced link (below) drains it smoothly.
struct Link {
  UniqueFd near, far;
};

Link link() {
  TcpListener l(parse_host_port("127.0.0.1:0"));
  Link k;
  k.near = UniqueFd(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  int mss = 1024;
  EXPECT_EQ(::setsockopt(k.near.get(), IPPROTO_TCP, TCP_MAXSEG, &mss, sizeof mss), 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<uint16_t>(l.port()));
  EXPECT_EQ(::connect(k.near.get(), reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  k.far = l.accept(5s);
  timeval tv{0, 100 * 1000};
  EXPECT_EQ(::setsockopt(k.near.get(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv), 0);
  return k;
}

// Sends without blocking until `limit` bytes or a full queue: what `far`
// must read before it answers.
size_t send_ahead(int fd, size_t limit) {
  std::vector<char> chunk(4096, 'p');
  size_t sent = 0;
  while (sent < limit) {
    ssize_t n = ::send(fd, chunk.data(), std::min(chunk.size(), limit - sent),
                       MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n < 0) {
      EXPECT_TRUE(errno == EAGAIN || errno == EWOULDBLOCK) << errno;
      break;
    }
    sent += static_cast<size_t>(n);
  }
  return sent;
}

TEST(MigrateReadAnswer, WaitsWhileASlowLinkStillCarriesWhatCameBefore) {
  Link k = link();
  // A slow link: TCP paces `near` at 256 KiB/s (its own pacing, as no fq
  // qdisc is on loopback), so 160 KiB take some six time-outs to cross.
  unsigned rate = 256 * 1024;
  int send_buffer = 1024 * 1024;
  ASSERT_EQ(::setsockopt(k.near.get(), SOL_SOCKET, SO_MAX_PACING_RATE, &rate, sizeof rate), 0);
  ASSERT_EQ(::setsockopt(k.near.get(), SOL_SOCKET, SO_SNDBUF, &send_buffer, sizeof send_buffer),
            0);
  const size_t queued = send_ahead(k.near.get(), 160 * 1024);
  ASSERT_EQ(queued, 160u * 1024);
  // The peer reads all of it as it comes, then answers.
  std::thread peer([&] {
    std::vector<char> buf(64 * 1024);
    size_t read = 0;
    while (read < queued) {
      ssize_t n = ::read(k.far.get(), buf.data(), buf.size());
      ASSERT_GT(n, 0);
      read += static_cast<size_t>(n);
    }
    ASSERT_EQ(::write(k.far.get(), "ok!", 4), 4);
  });
  const auto t0 = std::chrono::steady_clock::now();
  char answer[4] = {};
  EXPECT_NO_THROW(read_answer(k.near.get(), answer, sizeof answer, "reading the answer"));
  const auto took = std::chrono::steady_clock::now() - t0;
  peer.join();
  EXPECT_STREQ(answer, "ok!");
  // It did outlast the time-out, or the case tests nothing.
  EXPECT_GT(took, 200ms);
}

// read_answer's failure on `near`, if it fails.
std::optional<Error> answer_failure(const Link& k) {
  char answer[4] = {};
  try {
    read_answer(k.near.get(), answer, sizeof answer, "reading the answer");
  } catch (const Error& e) {
    return e;
  }
  return std::nullopt;
}

TEST(MigrateReadAnswer, ATimeOutWithTheQueueStandingStillIsSilence) {
  Link k = link();
  int buffer = 16 * 1024;
  ASSERT_EQ(::setsockopt(k.far.get(), SOL_SOCKET, SO_RCVBUF, &buffer, sizeof buffer), 0);
  ASSERT_GT(send_ahead(k.near.get(), 64 * 1024 * 1024), 0u);  // and `far` never reads
  std::optional<Error> e = answer_failure(k);
  ASSERT_TRUE(e) << "a peer that reads nothing and never answers must time out";
  EXPECT_EQ(e->sys_errno(), ETIMEDOUT) << e->what();
  EXPECT_NE(std::string(e->what()).find("reading the answer"), std::string::npos) << e->what();
}

TEST(MigrateReadAnswer, ATimeOutWithNothingQueuedIsSilence) {
  Link k = link();
  std::optional<Error> e = answer_failure(k);
  ASSERT_TRUE(e) << "a peer that has everything and does not answer must time out";
  EXPECT_EQ(e->sys_errno(), ETIMEDOUT) << e->what();
}

TEST(MigrateReadAnswer, AClosedPeerIsAnErrorNotAShortAnswer) {
  Link k = link();
  ASSERT_EQ(::write(k.far.get(), "o", 1), 1);
  k.far.reset();
  std::optional<Error> e = answer_failure(k);
  ASSERT_TRUE(e) << "an answer cut short must fail";
  EXPECT_EQ(e->cause(), crx::Cause::IO) << e->what();
}

}  // namespace
