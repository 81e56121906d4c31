// CancelWatch (migrate/cancel_watch.hpp): a set flag shuts the socket down;
// a watch that ends first, or has no flag, leaves it alone.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>

#include "common/unique_fd.hpp"
#include "migrate/cancel_watch.hpp"

namespace {

using crx::UniqueFd;
using crx::migrate::CancelWatch;
using namespace std::chrono_literals;

struct Pair {
  UniqueFd watched, peer;
};

Pair stream_pair() {
  int sv[2];
  EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
  return {UniqueFd(sv[0]), UniqueFd(sv[1])};
}

TEST(MigrateCancelWatch, ASetFlagShutsTheSocketDownWhileABlockedReadWaits) {
  Pair p = stream_pair();
  std::atomic<bool> cancel{false};
  CancelWatch watch(&cancel, p.watched.get(), 10ms);
  // A reader blocked on the socket, as CRIU's pre-dump is on its channel.
  std::thread reader([&] {
    char c;
    EXPECT_EQ(::read(p.watched.get(), &c, 1), 0) << "the shut-down socket must read as ended";
  });
  cancel.store(true);
  reader.join();
  EXPECT_TRUE(watch.fired());
  char c = 'x';
  EXPECT_EQ(::send(p.watched.get(), &c, 1, MSG_NOSIGNAL), -1);
  EXPECT_EQ(errno, EPIPE);
  EXPECT_EQ(::read(p.peer.get(), &c, 1), 0) << "the peer must see the end too";
}

TEST(MigrateCancelWatch, AWatchThatEndsFirstLeavesTheSocketAlone) {
  Pair p = stream_pair();
  std::atomic<bool> cancel{false};
  {
    CancelWatch watch(&cancel, p.watched.get(), 10ms);
    std::this_thread::sleep_for(30ms);
    EXPECT_FALSE(watch.fired());
  }
  cancel.store(true);  // after the round: the next check_cancel's business
  std::this_thread::sleep_for(30ms);
  char c = 'x';
  EXPECT_EQ(::send(p.watched.get(), &c, 1, MSG_NOSIGNAL), 1);
  EXPECT_EQ(::read(p.peer.get(), &c, 1), 1);
}

TEST(MigrateCancelWatch, NoFlagNoWatch) {
  Pair p = stream_pair();
  CancelWatch watch(nullptr, p.watched.get(), 1ms);
  std::this_thread::sleep_for(10ms);
  EXPECT_FALSE(watch.fired());
  char c = 'x';
  EXPECT_EQ(::send(p.watched.get(), &c, 1, MSG_NOSIGNAL), 1);
}

}  // namespace
