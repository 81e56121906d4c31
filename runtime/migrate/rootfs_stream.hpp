// --send-rootfs: config.json and rootfs/ of a bundle as a tar stream
// (GNU tar, numeric owners, xattrs) in RootfsData frames, ended by
// RootfsEnd{bytes}.
#pragma once
#include <cstdint>
#include <string>

#include "migrate/frame.hpp"

namespace crx::migrate {

// Returns the bytes sent.
uint64_t send_bundle(FrameConn& conn, const std::string& bundle_dir);
// Unpacks into dest_dir (created; must not hold a bundle yet). Returns the
// bytes received. Throws if tar fails or the stream is cut.
uint64_t receive_bundle(FrameConn& conn, const std::string& dest_dir);

// sha256 of a file as hex (config.json identity check).
std::string sha256_file(const std::string& path);
std::string sha256_hex(std::string_view data);

}  // namespace crx::migrate
