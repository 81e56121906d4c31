// Unix sockets of a container connected to a peer outside it. CRIU carries a
// unix socket only together with its peer: a connection to a process that
// is not dumped (a host daemon's socket reached through a bind mount, the
// other end of a socketpair handed in by the caller) makes CRIU 3.17.1 fail
// the dump ("External socket is used", "Can't dump half of stream unix
// connection") after the container was frozen. crx finds them before it
// freezes anything and refuses with one line naming them.
//
// Which socket is whose: every socket fd of the container's processes
// (/proc/<pid>/fd -> "socket:[inode]") is ours; the kernel's sock_diag
// (NETLINK_SOCK_DIAG, AF_UNIX, UDIAG_SHOW_PEER) says each one's peer inode,
// asked from inside the container's network namespace (unix_diag lists the
// sockets of the asker's one). A connected socket whose peer is not ours is
// external. The decision is a pure function, unit-tested with made-up
// tables (tests/unit/checkpoint_unix_sockets_test.cpp).
#pragma once
#include <sys/types.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>


namespace crx::checkpoint {

struct SocketFd {
  pid_t pid = 0;
  int fd = -1;
};

// One unix socket as sock_diag describes it.
struct UnixSocketInfo {
  uint32_t inode = 0;
  uint32_t peer = 0;  // 0: not connected
  int type = 0;       // SOCK_STREAM, SOCK_DGRAM, SOCK_SEQPACKET
  std::string path;   // bound name ("@..." abstract), empty if none
};

struct ExternalUnixSocket {
  SocketFd where;
  UnixSocketInfo socket;
  std::string peer_path;  // the peer's bound name when sock_diag knows it
};

// ours: socket inode -> one fd holding it. diag: the unix sockets of the
// container's network namespace. With ext_unix_sk (CRIU's --ext-unix-sk,
// which dumps a datagram socket connected outside and connects it again by
// its peer's name on restore), datagram sockets are not external; CRIU
// 3.17.1 never carries half of a stream or seqpacket connection. Sorted by
// pid, then fd.
std::vector<ExternalUnixSocket> external_unix_sockets(const std::map<uint32_t, SocketFd>& ours,
                                                      const std::vector<UnixSocketInfo>& diag,
                                                      bool ext_unix_sk = false);

// The socket fds of the processes (inode -> first fd seen). Processes that
// are gone are skipped.
std::map<uint32_t, SocketFd> socket_fds(const std::vector<pid_t>& pids);
// sock_diag's unix sockets of the network namespace of `netns_pid` (the
// caller's own when it is 0). Throws crx::Error with the errno.
std::vector<UnixSocketInfo> unix_sockets_of_netns(pid_t netns_pid);

// The one line that refuses: the container, each socket (pid, fd, type,
// own and peer's name) and why.
std::string external_unix_sockets_error(const std::string& id,
                                        const std::vector<ExternalUnixSocket>& s);

// Refuses (throws crx::Error, EBUSY) if a process of `pids` holds a unix
// socket connected outside them; init's network namespace is the
// container's.
// A container's: pids is the tree a dump carries (ProcessSplit::in_tree_pids()).
void check_unix_sockets(const std::string& id, pid_t init, const std::vector<pid_t>& pids,
                        bool ext_unix_sk = false);

}  // namespace crx::checkpoint
