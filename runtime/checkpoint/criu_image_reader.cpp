#include "checkpoint/criu_image_reader.hpp"

#include <cstring>

#include "common/error.hpp"
#include "common/fs.hpp"

namespace crx::checkpoint {

CriuImageReader::CriuImageReader(const std::string& path, uint32_t magic)
    : path_(path), data_(read_file(path)) {
  if (data_.size() < 8 || u32(0) != kImageCommonMagic || u32(4) != magic)
    bad("not the image it should be (wrong magic)");
  off_ = 8;
}

bool CriuImageReader::next(const uint8_t** msg, size_t* len) {
  if (off_ == data_.size()) return false;
  if (data_.size() - off_ < 4) bad("a truncated entry at byte " + std::to_string(off_));
  uint32_t n = u32(off_);
  if (data_.size() - off_ - 4 < n) bad("a truncated entry at byte " + std::to_string(off_));
  *msg = reinterpret_cast<const uint8_t*>(data_.data() + off_ + 4);
  *len = n;
  off_ += 4 + n;
  return true;
}

void CriuImageReader::bad(const std::string& why) const {
  throw Error("CRIU's image " + path_ + ": " + why, Cause::Invalid);
}

uint32_t CriuImageReader::u32(size_t at) const {
  uint32_t v = 0;
  std::memcpy(&v, data_.data() + at, sizeof v);  // CRIU writes host order
  return v;
}

}  // namespace crx::checkpoint
