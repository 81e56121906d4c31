// The images of a migration live in RAM: a directory on tmpfs. If the
// configured image dir is not on tmpfs already, a private tmpfs is mounted
// there for the command's lifetime.
#pragma once
#include <cstdint>
#include <string>

namespace crx::migrate {

class RamDir {
 public:
  explicit RamDir(std::string path);
  ~RamDir();
  RamDir(const RamDir&) = delete;
  RamDir& operator=(const RamDir&) = delete;
  const std::string& path() const { return path_; }
  bool mounted_here() const { return mounted_; }

 private:
  std::string path_;
  bool mounted_ = false;
};

bool is_on_tmpfs(const std::string& path);

// The bytes of CRIU's page images (pages-*.img) in a round's dir, 0 when
// there is none.
uint64_t page_image_bytes(const std::string& round_dir);

}  // namespace crx::migrate
