#include <gtest/gtest.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <optional>

#include "capability.hpp"
#include "common/unique_fd.hpp"
#include "migrate/tcp_hush.hpp"

namespace {

using crx::UniqueFd;
using crx::migrate::SilencedTcpSockets;

// A loopback TCP connection whose client end lives in a child process
// (paused forever); returns the server end and the child's pid.
struct Connection {
  UniqueFd server_end;
  pid_t child = -1;
};

Connection connect_from_child() {
  UniqueFd listener(::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0));
  EXPECT_TRUE(listener);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  EXPECT_EQ(::bind(listener.get(), reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  EXPECT_EQ(::listen(listener.get(), 1), 0);
  EXPECT_EQ(::getsockname(listener.get(), reinterpret_cast<sockaddr*>(&a), &len), 0);
  pid_t pid = ::fork();
  if (pid == 0) {
    int s = ::socket(AF_INET, SOCK_STREAM, 0);
    if (s < 0 || ::connect(s, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) _exit(1);
    if (::write(s, "x", 1) != 1) _exit(1);
    for (;;) ::pause();
  }
  Connection c;
  c.child = pid;
  c.server_end = UniqueFd(::accept4(listener.get(), nullptr, nullptr, SOCK_CLOEXEC));
  EXPECT_TRUE(c.server_end);
  char ch = 0;
  EXPECT_EQ(::read(c.server_end.get(), &ch, 1), 1);
  return c;
}

void kill_child(pid_t pid) {
  ::kill(pid, SIGKILL);
  int status;
  ::waitpid(pid, &status, 0);
}

// What the server end sees within a short while: 0 = nothing, else revents.
short events_after_close(int fd) {
  struct pollfd p{fd, POLLIN | POLLRDHUP, 0};
  return ::poll(&p, 1, 500) > 0 ? p.revents : 0;
}

TEST(MigrateTcpHush, KillingAnUnsilencedProcessClosesItsConnection) {
  Connection c = connect_from_child();
  kill_child(c.child);
  EXPECT_NE(events_after_close(c.server_end.get()), 0) << "the peer must see the FIN";
}

TEST(MigrateTcpHush, SilencedSocketsCloseWithoutFinOrRst) {
  CRX_SKIP_WITHOUT(CAP_NET_ADMIN);  // TCP_REPAIR
  Connection c = connect_from_child();
  {
    SilencedTcpSockets silenced({c.child});
    EXPECT_EQ(silenced.count(), 1u);
    kill_child(c.child);
  }  // the last reference goes here, in repair mode
  EXPECT_EQ(events_after_close(c.server_end.get()), 0)
      << "the peer saw the connection end: its migrated copy would be dead";
}

TEST(MigrateTcpHush, GonePidsAreSkipped) {
  SilencedTcpSockets silenced({999999999});  // above any pid_max
  EXPECT_EQ(silenced.count(), 0u);
}

}  // namespace
