// Small helpers the checkpoint and the restore (container_checkpoint.cpp,
// prepared_restore.cpp) share: CRIU's image and work dirs, and which of a
// bundle's mounts are bind mounts (CRIU's external mounts).
#pragma once
#include <string>

#include "common/unique_fd.hpp"
#include "spec/spec.hpp"

namespace crx::checkpoint {

// The directory at path, opened O_DIRECTORY; made first (0700) when create.
// Throws Error with errno ("open <path>") when it is not there.
UniqueFd open_image_dir(const std::string& path, bool create);

// A "bind" mount, or one with a bind/rbind option.
bool is_bind_mount(const spec::Mount& m);

}  // namespace crx::checkpoint
