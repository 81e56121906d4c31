// The contents of a container's tmpfs, carried by crx instead of CRIU.
//
// CRIU 3.17.1 dumps every tmpfs that is not an external mount by running
// `tar --gzip` on it and unpacks it on restore the same way: two helper
// processes and a compression each way, inside the frozen window. Under
// TCG that cost seconds for an MPI rank's /tmp (Open MPI's and PMIx's
// session files, a few MB): tests/bench/mpi, "Where the frozen window
// went". crx packs such a tmpfs itself, in its own process and without
// compression, into the images dir (so a migration streams it like any
// image); on restore it fills the fresh tmpfs it stages for CRIU
// (recreated_mounts.hpp) before CRIU binds it in.
//
// The archive is a POSIX tar (libarchive, pax): regular files (holes kept),
// directories, symlinks, fifos and device nodes with their numeric owner,
// mode, times and extended attributes. Unix sockets are left out, as tar
// leaves them: CRIU binds the restored sockets again. A tmpfs holding a
// hard link (a non-directory with more than one name) is not carried:
// pack_tmpfs says why and CRIU packs it as before.
#pragma once
#include <optional>
#include <string>

namespace crx::checkpoint {

// The archive's file name in the images dir for the tmpfs mounted at
// `destination` in the container ("/tmp" -> "crx-tmpfs-%2Ftmp.tar").
std::string carried_tmpfs_file(const std::string& destination);

// Packs the tree at `dir` (not crossing into other mounts) into
// images_dir/name, which appears complete or not at all. Returns nullopt
// when done, or why the tree is not carried; throws Error (with its errno)
// when reading or writing fails. No file is left but a complete archive.
std::optional<std::string> pack_tmpfs(const std::string& dir, const std::string& images_dir,
                                      const std::string& name);

// Unpacks `archive` into the existing directory `dir` (the root entry sets
// dir's own mode, owner and times). Entries with an absolute name or a ".."
// component are refused; nothing is written through a symlink. Throws
// Error naming the archive and the entry.
void unpack_tmpfs(const std::string& archive, const std::string& dir);

}  // namespace crx::checkpoint
