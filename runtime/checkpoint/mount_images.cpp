#include "checkpoint/mount_images.hpp"

#include <dirent.h>

#include <memory>
#include <vector>

#include "checkpoint/criu_image_reader.hpp"
#include "common/error.hpp"
#include "criu-rpc/criu_mounts.pb-c.h"

namespace crx::checkpoint {
namespace {

std::vector<std::string> mount_image_names(const std::string& images_dir) {
  std::unique_ptr<DIR, int (*)(DIR*)> d(::opendir(images_dir.c_str()), ::closedir);
  if (!d) throw_errno("reading the images dir " + images_dir);
  std::vector<std::string> names;
  while (struct dirent* e = ::readdir(d.get())) {
    std::string n = e->d_name;
    if (n.rfind("mountpoints-", 0) == 0 && n.size() > 4 && n.ends_with(".img"))
      names.push_back(std::move(n));
  }
  return names;
}

bool image_propagates(const std::string& path) {
  CriuImageReader r(path, kMountpointsMagic);
  const uint8_t* msg;
  size_t len;
  for (size_t i = 0; r.next(&msg, &len); i++) {
    CrxMntEntry* m = crx_mnt_entry__unpack(nullptr, len, msg);
    if (!m) r.bad("mount " + std::to_string(i) + " does not parse");
    const bool propagates = (m->has_shared_id && m->shared_id) || (m->has_master_id && m->master_id);
    crx_mnt_entry__free_unpacked(m, nullptr);
    if (propagates) return true;
  }
  return false;
}

}  // namespace

bool mounts_propagate(const std::string& images_dir) {
  for (const auto& n : mount_image_names(images_dir))
    if (image_propagates(images_dir + "/" + n)) return true;
  return false;
}

}  // namespace crx::checkpoint
