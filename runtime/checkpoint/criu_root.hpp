// The rootfs bind-mounted on itself under the container's state dir: CRIU
// restores the container's mount tree on top of a mount point. The
// destructor detaches it and removes the directory.
#pragma once
#include <string>

namespace crx::checkpoint {

class CriuRoot {
 public:
  CriuRoot(const std::string& rootfs, const std::string& at);
  ~CriuRoot();
  CriuRoot(const CriuRoot&) = delete;
  CriuRoot& operator=(const CriuRoot&) = delete;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  bool mounted_ = false;
};

}  // namespace crx::checkpoint
