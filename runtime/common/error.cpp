#include "common/error.hpp"

#include <cerrno>
#include <cstring>

namespace crx {

void throw_errno(std::string_view what, int err) {
  std::string msg(what);
  msg += ": ";
  msg += std::strerror(err);
  throw Error(msg, err);
}

void throw_errno(std::string_view what) { throw_errno(what, errno); }

}  // namespace crx
