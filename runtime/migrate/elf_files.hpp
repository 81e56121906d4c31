// Libraries checked before the freeze (README.md, "Libraries checked
// before the freeze"). CRIU's default file validation reads the ELF
// build-id of every file the tasks map or hold open, at the dump and again
// at the restore: ~2.4 ms a file in a guest, ~0.3 s of an MPI rank's
// frozen window (112 ELF files). crx reads them on the source before the
// freeze and sends them in the manifest; the destination checks its own
// files against them before it accepts, and refuses naming the first that
// differs. The final dump then asks CRIU to validate sizes only
// (`file-validation filesize`), but only when the frozen tasks map or hold
// no file that was not read before.
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "checkpoint/task_files.hpp"
#include "spec/spec.hpp"

namespace crx::migrate {

// An ELF file with a build-id that the container's tasks map or hold open.
struct ElfFile {
  std::string path;  // as the container sees it
  uint64_t size = 0;
  std::string build_id;  // hex
};

nlohmann::json elf_files_to_json(const std::vector<ElfFile>& files);
// Throws Error (Cause::Invalid) naming what is malformed.
std::vector<ElfFile> elf_files_from_json(const nlohmann::json& j);

// The source's reading, before the freeze.
class ElfFilesSeen {
 public:
  // Every regular file the tasks map or hold open, and the build-ids of
  // the ELF ones (checkpoint::elf_build_id). An ELF file is listed only
  // where its path, resolved as the destination will (host_place() of the
  // container's config s and bundle, on this host), is that very file: a
  // file under a mount the config does not name (one the container made)
  // or a tmpfs is not. A file with a build-id that is not listed, or that
  // could not be looked at or read, is not counted as read: covers() is
  // false while the tasks still map or hold it.
  ElfFilesSeen(const std::vector<pid_t>& pids, const spec::Spec& s, const std::string& bundle);
  // The ELF files with a build-id, for the manifest.
  const std::vector<ElfFile>& files() const { return elf_; }
  // In the frozen window: whether CRIU would find no build-id it was not
  // shown before, i.e. every regular file the tasks map or hold open now
  // was read by the constructor, or is unlinked (CRIU carries it), or has
  // no build-id (read now). Never throws: false when unsure, and when a
  // mapping or fd cannot be looked at.
  bool covers(const std::vector<pid_t>& pids) const noexcept;

 private:
  std::set<checkpoint::FileId> read_;  // read, in files() or without a build-id
  std::vector<ElfFile> elf_;
};

// What the destination found of one file.
struct FoundFile {
  enum class State { Found, Missing, Unreadable } state = State::Missing;
  uint64_t size = 0;
  std::optional<std::string> build_id;
};

// Where a file of the container is on the destination, from its config: a
// directory (the rootfs, or a bind mount's source) and the path below it.
// nullopt when it is under another mount (a tmpfs, /proc, ...): nothing
// there before the restore to compare with.
struct HostPlace {
  std::string root;
  std::string path;  // absolute, resolved inside root
};
std::optional<HostPlace> host_place(const spec::Spec& s, const std::string& bundle,
                                    const std::string& path);

struct ElfFilesChecked {
  // "file <path>, which the container maps, does not exist on the
  // destination" / "... differs on the destination (build-id X here, Y on
  // the source)", for each such file.
  std::vector<std::string> refusals;
  // Every file was found and is the same: the final dump may leave the
  // build-ids out.
  bool all_same = false;
};
// Pure: look(place) tells what is at a place (the real one: look_on_host).
ElfFilesChecked check_elf_files(const spec::Spec& s, const std::string& bundle,
                                const std::vector<ElfFile>& files,
                                const std::function<FoundFile(const HostPlace&)>& look);

// The file at p on this host, opened inside p.root (openat2
// RESOLVE_IN_ROOT, as the restored task would resolve it).
FoundFile look_on_host(const HostPlace& p);

}  // namespace crx::migrate
