// What crx reads of CRIU's mount images (mountpoints-<id>.img): whether
// the dumped mount trees take part in mount propagation, which decides
// the mount engine CRIU restores them with.
//
// CRIU 3.17 has two. Its default, mount-v2, mounts every mount on a plain
// mountpoint of its own first and moves it into the tree afterwards, so
// that it can rebuild sharing groups (MOVE_MOUNT_SET_GROUP); the engine
// before it (`--mntns-compat-mode`) mounts in tree order in place. For a
// tree of private mounts, as crx makes them, both build the same mounts,
// and the older engine does less work: CRIU's restore of a 16 MiB
// container's 22 mounts took 0.22 s against 0.26 s (medians of six
// interleaved migrations, tests/bench/migrate/README.md). A tree with
// shared or slave mounts keeps CRIU's default, the engine made for them.
#pragma once
#include <string>

namespace crx::checkpoint {

// Whether any mount in the images dir's mountpoints-*.img has a peer group
// or a master. false when there is no mount image (no mount namespace
// dumped). Throws Error (Cause::Invalid) naming the file and the mount for
// an image that does not parse, with the errno when the dir or a file
// cannot be read.
bool mounts_propagate(const std::string& images_dir);

}  // namespace crx::checkpoint
