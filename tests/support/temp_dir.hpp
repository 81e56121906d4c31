// A fresh directory for one test (unit and host tests), removed with
// everything in it when the object goes, also when an ASSERT returns early:
//   class Store : public ::testing::Test {
//    protected:
//     crx::test::TempDir tmp{"crx-store"};  // /tmp/crx-store-XXXXXX
//   };
//   TempDir dir("crx-log");  write_text(dir / "log.json", ...);
#pragma once
#include <stdlib.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>
#include <utility>

#include "common/fs.hpp"

namespace crx::test {

class TempDir {
 public:
  explicit TempDir(const std::string& prefix) {
    std::string tmpl = "/tmp/" + prefix + "-XXXXXX";
    if (!::mkdtemp(tmpl.data()))
      throw std::runtime_error("mkdtemp " + tmpl + ": " + std::strerror(errno));
    path_ = tmpl;
  }
  ~TempDir() {
    if (path_.empty()) return;
    try {
      remove_tree(path_);
    } catch (...) {
    }
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  // Moved, the directory has one owner still: the moved-from object
  // removes nothing.
  TempDir(TempDir&& other) noexcept : path_(std::move(other.path_)) { other.path_.clear(); }
  TempDir& operator=(TempDir&&) = delete;

  const std::string& path() const { return path_; }
  // A path inside the directory.
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

}  // namespace crx::test
