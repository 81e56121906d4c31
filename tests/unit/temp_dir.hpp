// A fresh directory for one test, removed with everything in it when the
// test's fixture goes:
//   class Store : public ::testing::Test {
//    protected:
//     crx::test::TempDir tmp{"crx-store"};  // /tmp/crx-store-XXXXXX
//   };
#pragma once
#include <stdlib.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>

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
    try {
      remove_tree(path_);
    } catch (...) {
    }
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace crx::test
