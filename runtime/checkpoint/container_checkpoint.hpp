// runc-compatible checkpoint and restore of a crx container, on top of the
// CRIU client (criu_rpc.hpp) and the runtime's state store and cgroups.
//
// Bind mounts of the container are passed to CRIU as external mounts
// (dump: key = value = destination; restore: key = destination, value =
// the source on this host), masked files (/dev/null binds) likewise; the
// empty tmpfs mounts and /dev crx makes again on restore too
// (recreated_mounts.hpp, recreated_dev.hpp). The container is frozen
// through the cgroup freezer (CRIU's freeze_cgroup).
// Restore creates an ordinary crx container: state.json, cgroup, pid file;
// state, exec, kill and delete work on it afterwards.
#pragma once
#include <sys/types.h>

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "checkpoint/criu_options.hpp"
#include "container/create.hpp"
#include "checkpoint/outside_processes.hpp"
#include "checkpoint/recreated_dev.hpp"
#include "spec/spec.hpp"
#include "state/store.hpp"

namespace crx::checkpoint {

// What CRIU needs to know about the container, beyond the command's flags.
struct CriuFlags {
  bool tcp_established = false;
  bool ext_unix_sk = false;
  bool shell_job = false;
  bool file_locks = false;
  bool auto_dedup = false;
  bool lazy_pages = false;
  std::optional<CgroupMode> manage_cgroups_mode;
  std::vector<std::string> empty_ns;  // namespace types: "network", ...
};

struct CheckpointRequest {
  std::string image_path;  // required
  std::string work_path;   // default: image_path
  std::string parent_path;  // relative to image_path, like runc's --parent-path
  bool leave_running = false;
  bool pre_dump = false;
  std::string page_server;  // "HOST:PORT"
  int status_fd = -1;       // --lazy-pages: CRIU writes when ready
  CriuFlags flags;
  // Processes outside the init's tree (crx exec) are not in the images
  // (outside_processes.hpp): without this the checkpoint is refused before
  // anything is frozen; with it they are left out, and die with the
  // container unless it is left running.
  bool kill_exec = false;
};

// `crx checkpoint`. The images dir also gets crx-container.json
// (carried_state.hpp): updated resources, annotations, owner, pid file,
// paused. Without leave_running the container is stopped and
// deleted afterwards (its state removed), as runc does. With it (and after
// a failed dump or a pre-dump) the QPs the verbs plugin stopped are resumed.
void checkpoint_container(const container::GlobalOptions& g, const std::string& id,
                          const CheckpointRequest& r);

struct RestoreRequest {
  std::string image_path;  // required
  // PreparedRestore only: image_path is a directory below which the
  // images will be (a migration's rounds), not the images dir itself.
  bool images_below = false;
  std::string work_path;   // default: image_path
  std::string bundle = ".";
  std::string pid_file;
  std::string console_socket;
  bool detach = false;
  bool no_subreaper = false;
  // Restored tasks become children of the caller (`crx restore` waits for
  // them when not detached); false leaves them to CRIU (they are reparented).
  bool as_child = true;
  CriuFlags flags;
  // Called when the restored tasks are ready to resume (CRIU's pre-resume);
  // throwing aborts the restore, and nothing is left.
  std::function<void()> hold;
  // The verbs plugin leaves restored QPs stopped; the caller resumes them
  // (rdma::ContainerQps) once it wants them to talk (a migration: after
  // the commit). Without, the plugin resumes them at the end of the restore.
  bool defer_verbs_resume = false;
  // Without pid_file: write the pid to the pid file the checkpointed
  // container's creator named (crx-container.json), as a migration does.
  bool carried_pid_file = false;
  // A container checkpointed while paused comes back paused (a migration:
  // as libvirt keeps a paused VM paused). Without, it comes back running,
  // as with runc (containerd pauses every task it checkpoints, and its
  // shim expects the restored task to run).
  bool keep_paused = false;
};

// `crx restore` (PreparedRestore's two steps at once, prepared_restore.hpp);
// returns the restored init's pid. With a crx-container.json
// in the images (carried_state.hpp) the cgroup gets the resources it names,
// the state its annotations and owner, and a container that was paused is
// frozen again before its tasks resume (it stays paused). Hooks as in runc
// 1.1.5: prestart and createRuntime run when CRIU has made the namespaces,
// poststart does not run (the container was started once already). On error nothing is left:
// no state dir, cgroup, mount or process. A crx-verbs-restore.json with
// ok:false in the images dir (the verbs plugin) fails the restore.
pid_t restore_container(const container::GlobalOptions& g, const std::string& id,
                        const RestoreRequest& r);

// The command's flags that both dump and restore pass to CRIU.
void apply_criu_flags(CommonOptions& o, const CriuFlags& f);

// The pieces migration needs on the source: dump options for a crx
// container (without images dir / work dir / page server, which the caller
// sets), and its cgroup operations.
struct SourceContainer {
  pid_t pid = 0;
  std::string freezer_dir;  // CRIU's freeze_cgroup
  DumpOptions base;         // pid, root, ext mounts, flags
  spec::Spec spec;          // the container's config
  std::string state_dir;    // crx's dir of the container (scratch space)
  state::ContainerState state;
  bool paused = false;      // frozen by `crx pause` before the checkpoint
  // The /dev crx makes for spec (expected_dev_tree()), made and listed
  // while the container runs, so that add_recreated_mounts() only lists
  // the frozen container's; nullopt: CRIU dumps the container's /dev.
  std::optional<std::vector<DevEntry>> expected_dev;
};
SourceContainer prepare_source(const container::GlobalOptions& g, const std::string& id,
                               const CriuFlags& flags);
// For the final dump of a FROZEN container: the tmpfs mounts that restore
// makes again (recreated_mounts.hpp) become external mounts, so CRIU
// neither packs nor unpacks them; the contents of those that hold files go
// into images_dir (carried_tmpfs.hpp). Ahead: the same choice for a request
// sent while the container runs, nothing packed (recreated_dump_mounts_
// ahead), to be made again frozen.
enum class MountsChoice { Frozen, Ahead };
void add_recreated_mounts(DumpOptions& o, const SourceContainer& s, const std::string& images_dir,
                          MountsChoice when = MountsChoice::Frozen);
// Freezes the container prepare_source() loaded, through its cgroup;
// throws Error (Cause::NotFound) when its init is gone.
void freeze_container(const SourceContainer& s);
void thaw_container(const container::GlobalOptions& g, const std::string& id);
// Refuses (crx::Error, one line) when processes outside the init's tree
// would be left out and kill_exec is false; returns the container's
// processes otherwise (those left out are its `outside`).
ProcessSplit check_outside_processes(const SourceContainer& s, bool kill_exec);
// SIGKILL to every task of a frozen container, then thaw (the tasks die).
void kill_frozen_container(const container::GlobalOptions& g, const std::string& id);

}  // namespace crx::checkpoint
