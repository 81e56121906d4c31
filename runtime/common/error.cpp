#include "common/error.hpp"

#include <cerrno>
#include <cstring>

namespace crx {

Cause cause_of_errno(int err) {
  switch (err) {
    case ENOENT: case ESRCH: case ENXIO: case ENODEV:
      return Cause::NotFound;
    case EEXIST: case ENOTEMPTY:
      return Cause::Exists;
    case EBUSY: case EAGAIN: case ETXTBSY:
      return Cause::Busy;
    case EINVAL: case ENOTDIR: case EISDIR: case EBADF: case ERANGE: case ENAMETOOLONG: case ELOOP:
      return Cause::Invalid;
    case EPERM: case EACCES: case EROFS:
      return Cause::Permission;
    case EIO: case ENOSPC: case EDQUOT: case EPIPE: case ECONNRESET: case ECONNREFUSED:
    case ENOTCONN: case EHOSTUNREACH: case ENETUNREACH:
      return Cause::IO;
    case ENOSYS: case EOPNOTSUPP: case EAFNOSUPPORT: case EPROTONOSUPPORT:
      return Cause::Unsupported;
    case ETIMEDOUT:
      return Cause::TimedOut;
    default:
      return Cause::Other;
  }
}

const char* cause_name(Cause c) {
  switch (c) {
    case Cause::Other: return "other";
    case Cause::NotFound: return "not found";
    case Cause::Exists: return "exists";
    case Cause::Busy: return "busy";
    case Cause::Invalid: return "invalid";
    case Cause::Permission: return "permission";
    case Cause::IO: return "I/O";
    case Cause::Unsupported: return "unsupported";
    case Cause::TimedOut: return "timed out";
    case Cause::Peer: return "peer";
  }
  return "other";
}

void throw_errno(std::string_view what, int err) {
  std::string msg(what);
  msg += ": ";
  msg += std::strerror(err);
  throw Error(msg, err);
}

void throw_errno(std::string_view what) { throw_errno(what, errno); }

}  // namespace crx
