#include <gtest/gtest.h>
#include <signal.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>

#include "common/retry_eintr.hpp"

namespace {

using crx::retry_eintr;

TEST(RetryEintr, CallsAgainWhileInterrupted) {
  int calls = 0;
  int r = retry_eintr([&] {
    if (++calls < 3) {
      errno = EINTR;
      return -1;
    }
    return 7;
  });
  EXPECT_EQ(r, 7);
  EXPECT_EQ(calls, 3);
}

TEST(RetryEintr, ReturnsOtherFailuresWithTheirErrno) {
  int calls = 0;
  ssize_t r = retry_eintr([&]() -> ssize_t {
    ++calls;
    errno = EAGAIN;
    return -1;
  });
  EXPECT_EQ(r, -1);
  EXPECT_EQ(errno, EAGAIN);
  EXPECT_EQ(calls, 1);
}

TEST(RetryEintr, AReadInterruptedByASignalGoesOn) {
  // SIGALRM without SA_RESTART interrupts the blocking read; a child
  // writes only after the alarm has fired.
  struct sigaction sa {}, old {};
  sa.sa_handler = [](int) {};
  ASSERT_EQ(::sigaction(SIGALRM, &sa, &old), 0);
  int p[2];
  ASSERT_EQ(::pipe(p), 0);
  pid_t pid = ::fork();
  if (pid == 0) {
    ::usleep(300 * 1000);
    (void)!::write(p[1], "x", 1);
    ::_exit(0);
  }
  ::close(p[1]);
  itimerval t{};
  t.it_value.tv_usec = 50 * 1000;
  ASSERT_EQ(::setitimer(ITIMER_REAL, &t, nullptr), 0);
  char c = 0;
  int interrupted = 0;
  ssize_t n = retry_eintr([&] {
    ssize_t r = ::read(p[0], &c, 1);
    if (r < 0 && errno == EINTR) ++interrupted;
    return r;
  });
  EXPECT_EQ(n, 1);
  EXPECT_EQ(c, 'x');
  EXPECT_EQ(interrupted, 1);
  ::close(p[0]);
  ::waitpid(pid, nullptr, 0);
  ::sigaction(SIGALRM, &old, nullptr);
}

}  // namespace
