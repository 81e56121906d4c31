// A listening unix socket at a path, as runtimes' peers (console socket,
// seccomp listener) provide them, for unit tests.
#pragma once
#include <sys/socket.h>
#include <sys/un.h>

#include <cstring>
#include <string>

#include "common/unique_fd.hpp"

namespace crx::test {

// Invalid fd when bind or listen fails.
inline crx::UniqueFd listen_unix(const std::string& path) {
  crx::UniqueFd server(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
  if (::bind(server.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::listen(server.get(), 1) != 0)
    return crx::UniqueFd();
  return server;
}

}  // namespace crx::test
