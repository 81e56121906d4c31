// Unix sockets of a container connected outside it
// (checkpoint/unix_sockets.hpp): the decision on made-up tables, and the
// real lookups (/proc fds, sock_diag) on this process and a child.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>

#include "capability.hpp"
#include "checkpoint/unix_sockets.hpp"
#include "common/error.hpp"

namespace {

using crx::checkpoint::external_unix_sockets;
using crx::checkpoint::SocketFd;
using crx::checkpoint::UnixSocketInfo;

uint32_t inode_of(int fd) {
  struct stat st {};
  EXPECT_EQ(::fstat(fd, &st), 0);
  return static_cast<uint32_t>(st.st_ino);
}

// A child that holds one end of a socketpair (the other end stays here)
// until it is killed.
struct Holder {
  pid_t pid = -1;
  int mine = -1;
  uint32_t mine_ino = 0, theirs_ino = 0;
  explicit Holder(int type) {
    int sv[2];
    EXPECT_EQ(::socketpair(AF_UNIX, type | SOCK_CLOEXEC, 0, sv), 0);
    mine_ino = inode_of(sv[0]);
    theirs_ino = inode_of(sv[1]);
    pid = ::fork();
    if (pid == 0) {
      ::close(sv[0]);
      ::pause();
      ::_exit(0);
    }
    ::close(sv[1]);
    mine = sv[0];
  }
  ~Holder() {
    ::close(mine);
    ::kill(pid, SIGKILL);
    ::waitpid(pid, nullptr, 0);
  }
};

TEST(UnixSocketsTest, ConnectedToAPeerOutsideIsExternal) {
  std::map<uint32_t, SocketFd> ours{{10, {100, 3}}, {11, {100, 4}}, {12, {101, 5}}};
  std::vector<UnixSocketInfo> diag{
      {10, 11, SOCK_STREAM, ""},                    // both ends ours
      {11, 10, SOCK_STREAM, ""},
      {12, 90, SOCK_STREAM, ""},                    // peer 90 is the host's
      {90, 12, SOCK_STREAM, "/run/daemon.sock"},    // (the host's socket)
      {13, 0, SOCK_STREAM, "/tmp/listening"},       // not ours, not connected
  };
  auto ext = external_unix_sockets(ours, diag);
  ASSERT_EQ(ext.size(), 1u);
  EXPECT_EQ(ext[0].where.pid, 101);
  EXPECT_EQ(ext[0].where.fd, 5);
  EXPECT_EQ(ext[0].socket.peer, 90u);
  EXPECT_EQ(ext[0].peer_path, "/run/daemon.sock");
  auto msg = crx::checkpoint::external_unix_sockets_error("c1", ext);
  EXPECT_NE(msg.find("container c1"), std::string::npos) << msg;
  EXPECT_NE(msg.find("pid 101 fd 5 (stream -> /run/daemon.sock)"), std::string::npos) << msg;
  EXPECT_EQ(msg.find('\n'), std::string::npos) << "one line";
}

TEST(UnixSocketsTest, DatagramGoesWithExtUnixSkStreamNever) {
  std::map<uint32_t, SocketFd> ours{{40, {100, 3}}, {41, {100, 4}}};
  std::vector<UnixSocketInfo> diag{{40, 90, SOCK_DGRAM, ""}, {41, 91, SOCK_STREAM, ""}};
  auto without = external_unix_sockets(ours, diag);
  ASSERT_EQ(without.size(), 2u);
  auto msg = crx::checkpoint::external_unix_sockets_error("c", without);
  EXPECT_NE(msg.find("--ext-unix-sk"), std::string::npos) << msg;
  auto with = external_unix_sockets(ours, diag, true);
  ASSERT_EQ(with.size(), 1u);
  EXPECT_EQ(with[0].socket.inode, 41u);
  msg = crx::checkpoint::external_unix_sockets_error("c", with);
  EXPECT_EQ(msg.find("--ext-unix-sk"), std::string::npos) << "no way out for a stream: " << msg;
}

TEST(UnixSocketsTest, ListeningAndUnconnectedSocketsAreNot) {
  std::map<uint32_t, SocketFd> ours{{20, {100, 3}}, {21, {100, 4}}};
  std::vector<UnixSocketInfo> diag{{20, 0, SOCK_STREAM, "/srv/s"}, {21, 0, SOCK_DGRAM, ""}};
  EXPECT_TRUE(external_unix_sockets(ours, diag).empty());
}

TEST(UnixSocketsTest, PeerWithoutADiagEntryIsNamedByInode) {
  // the peer lives in another network namespace: sock_diag does not list it
  std::map<uint32_t, SocketFd> ours{{30, {100, 7}}};
  auto ext = external_unix_sockets(ours, {{30, 77, SOCK_SEQPACKET, "@abstract"}});
  ASSERT_EQ(ext.size(), 1u);
  auto msg = crx::checkpoint::external_unix_sockets_error("c", ext);
  EXPECT_NE(msg.find("(seqpacket @abstract -> socket:[77])"), std::string::npos) << msg;
}

TEST(UnixSocketsTest, RealSocketpairWithAChildIsExternalToThisProcessOnly) {
  Holder h(SOCK_STREAM);
  auto fds = crx::checkpoint::socket_fds({::getpid()});
  ASSERT_TRUE(fds.count(h.mine_ino)) << "our end is found in /proc/self/fd";
  EXPECT_EQ(fds.at(h.mine_ino).fd, h.mine);
  EXPECT_FALSE(fds.count(h.theirs_ino)) << "the child's end is not ours";

  auto diag = crx::checkpoint::unix_sockets_of_netns(0);
  auto ext = external_unix_sockets(fds, diag);
  bool found = false;
  for (auto& e : ext) found |= e.socket.inode == h.mine_ino && e.socket.peer == h.theirs_ino;
  EXPECT_TRUE(found) << "sock_diag gives our end's peer: the child's end";

  // With the child counted in, the pair is inside.
  auto both = crx::checkpoint::socket_fds({::getpid(), h.pid});
  for (auto& e : external_unix_sockets(both, diag)) EXPECT_NE(e.socket.inode, h.mine_ino);
}

TEST(UnixSocketsTest, CheckRefusesWithTheCauseAndNamesTheSocket) {
  Holder h(SOCK_SEQPACKET);
  try {
    crx::checkpoint::check_unix_sockets("c9", 0, {::getpid()});
    FAIL() << "not refused";
  } catch (const crx::Error& e) {
    EXPECT_EQ(e.sys_errno(), EBUSY);
    std::string want = "fd " + std::to_string(h.mine) + " (seqpacket";
    EXPECT_NE(std::string(e.what()).find(want), std::string::npos) << e.what();
  }
}

}  // namespace

namespace {

// The container's network namespace is joined by a helper thread; here it
// is our own (joining it needs CAP_SYS_ADMIN).
TEST(UnixSocketsTest, AsksInTheNetworkNamespaceOfTheInit) {
  CRX_SKIP_WITHOUT(CAP_SYS_ADMIN);  // setns
  Holder h(SOCK_STREAM);
  EXPECT_THROW(crx::checkpoint::check_unix_sockets("c", ::getpid(), {::getpid()}), crx::Error);
  try {
    crx::checkpoint::unix_sockets_of_netns(999999999);
    FAIL() << "no such process";
  } catch (const crx::Error& e) {
    EXPECT_EQ(e.sys_errno(), ENOENT) << e.what();
  }
}

}  // namespace
