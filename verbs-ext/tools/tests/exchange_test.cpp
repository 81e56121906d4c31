// accept_peer, the receiver's wait for its sender: it must outlive an
// interrupted poll (what a process restored by CRIU during the wait gets),
// and still end at a stop signal. Found by the migration soak
// (tests/soak/migrate_soak.py), which moves a receiver before any sender.
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <string>
#include <thread>

#include "common/error.hpp"
#include "seq/clock.hpp"
#include "seq/exchange.hpp"

namespace crx::verbs_seq {

// main.cpp's, which this binary does not link.
volatile int g_stop_signal = 0;
volatile int g_finish_signal = 0;

namespace {

uint16_t free_port() {
  UniqueFd s(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof sa;
  if (::bind(s.get(), reinterpret_cast<sockaddr*>(&sa), sizeof sa) ||
      ::getsockname(s.get(), reinterpret_cast<sockaddr*>(&sa), &len))
    throw_errno("bind to a free port");
  return ntohs(sa.sin_port);
}

bool connect_to(uint16_t port) {
  UniqueFd s(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_in sa{};
  sa.sin_family = AF_INET;
  sa.sin_port = htons(port);
  sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return ::connect(s.get(), reinterpret_cast<sockaddr*>(&sa), sizeof sa) == 0;
}

void ignore(int) {}
void stop(int sig) { g_stop_signal = sig; }

// Runs accept_peer in a thread, interrupts its wait with SIGUSR2 (handled
// by `handler`, without SA_RESTART) and then, if `connect`, connects.
// Returns "" once a peer was accepted, else the error.
std::string accept_interrupted(void (*handler)(int), bool connect) {
  struct sigaction sa {}, old {};
  sa.sa_handler = handler;
  sigemptyset(&sa.sa_mask);
  sigaction(SIGUSR2, &sa, &old);
  const uint16_t port = free_port();
  std::atomic<bool> done{false};
  std::string error;
  pthread_t waiter{};
  std::atomic<bool> started{false};
  std::thread t([&] {
    waiter = pthread_self();
    started = true;
    try {
      UniqueFd peer = accept_peer("127.0.0.1", port, 20);
      if (!peer) error = "no fd";
    } catch (const std::exception& e) {
      error = e.what();
    }
    done = true;
  });
  while (!started) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // in the poll by now
  pthread_kill(waiter, SIGUSR2);
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  for (int i = 0; connect && !done && i < 100 && !connect_to(port); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  t.join();
  sigaction(SIGUSR2, &old, nullptr);
  g_stop_signal = 0;
  return error;
}

TEST(AcceptPeer, WaitsOnThroughAnInterruptedPoll) {
  EXPECT_EQ(accept_interrupted(ignore, true), "");
}

TEST(AcceptPeer, EndsAtAStopSignal) {
  const auto t0 = std::chrono::steady_clock::now();
  std::string error = accept_interrupted(stop, false);
  EXPECT_NE(error.find("poll on the listening socket"), std::string::npos) << error;
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(10)) << "it waited for its time-out";
}

}  // namespace
}  // namespace crx::verbs_seq
