// One CRIU image file read whole: the common magic and the image's own,
// then entries, each a u32 length (host order) and a protobuf message.
// The messages are crx's own declarations of CRIU's (criu_memory.proto,
// criu_mounts.proto); this class only splits the file.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

namespace crx::checkpoint {

// CRIU's magics (criu/include/magic.h).
inline constexpr uint32_t kImageCommonMagic = 0x54564319;
inline constexpr uint32_t kPagemapMagic = 0x56084025;
inline constexpr uint32_t kMmMagic = 0x57492820;
inline constexpr uint32_t kMountpointsMagic = 0x55563928;

class CriuImageReader {
 public:
  // Throws Error (Cause::Invalid) naming the file when it is not an image
  // with that magic, with its errno when it cannot be read.
  CriuImageReader(const std::string& path, uint32_t magic);
  // The next entry's message, false at the end; throws on a truncated one.
  bool next(const uint8_t** msg, size_t* len);
  [[noreturn]] void bad(const std::string& why) const;

 private:
  uint32_t u32(size_t at) const;
  std::string path_, data_;
  size_t off_ = 0;
};

}  // namespace crx::checkpoint
