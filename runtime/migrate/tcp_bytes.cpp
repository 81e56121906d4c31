// tcp_bytes_received() (net.hpp), apart from net.cpp: glibc's
// <netinet/tcp.h> has an older struct tcp_info without the byte counts,
// and it cannot be included together with the kernel's <linux/tcp.h>.
#include <linux/tcp.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cstdint>

#include "common/error.hpp"
#include "migrate/net.hpp"

namespace crx::migrate {

uint64_t tcp_bytes_received(int fd) {
  struct tcp_info ti{};
  socklen_t len = sizeof ti;
  if (::getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) != 0) throw_errno("TCP_INFO");
  // Kernels before 4.1 stop short of the field.
  if (len < offsetof(struct tcp_info, tcpi_bytes_received) + sizeof ti.tcpi_bytes_received)
    throw Error("TCP_INFO has no byte count on this kernel", Cause::Unsupported);
  return ti.tcpi_bytes_received;
}

}  // namespace crx::migrate
