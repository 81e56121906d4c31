// Translating OCI mount option strings into mount(2) flags and data.
#pragma once
#include <string>
#include <vector>

namespace crx::mounts {

struct MountOptions {
  unsigned long flags = 0;          // MS_* for the mount itself
  unsigned long clear_flags = 0;    // flags explicitly turned off (rw, suid, dev, exec, ...)
  std::vector<unsigned long> propagation;  // MS_PRIVATE|MS_REC etc., applied afterwards
  std::string data;                 // everything else, comma separated
  bool bind = false;
  bool recursive = false;           // rbind
};

MountOptions parse_mount_options(const std::vector<std::string>& options);

// rootfsPropagation value ("", "rslave", "shared", ...) to MS_* flags.
// Throws crx::Error for an unknown value.
unsigned long propagation_flags(const std::string& value);

}  // namespace crx::mounts
