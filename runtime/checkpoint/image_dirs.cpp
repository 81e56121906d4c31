#include "checkpoint/image_dirs.hpp"

#include <fcntl.h>

#include "common/error.hpp"
#include "common/fs.hpp"

namespace crx::checkpoint {

UniqueFd open_image_dir(const std::string& path, bool create) {
  if (create) mkdir_p(path, 0700);
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd) throw_errno("open " + path);
  return fd;
}

bool is_bind_mount(const spec::Mount& m) {
  if (m.type == "bind") return true;
  for (const auto& o : m.options) {
    if (o == "bind" || o == "rbind") return true;
  }
  return false;
}

}  // namespace crx::checkpoint
