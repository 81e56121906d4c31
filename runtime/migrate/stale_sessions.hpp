// What a `crx receive` that died in the middle of a migration (SIGKILL, a
// crash, the OOM killer) leaves behind, and its removal by the next one.
//
// Each migration's directory in the receiver's RAM dir holds receiver.json:
// the receiver's pid and start time, the container id, when the session
// began and whether the sender's commit had arrived. A receiver that is
// killed cannot clean up; `crx receive` calls sweep_stale_sessions() before
// it listens. For each directory whose receiver is gone:
//   - not committed: the sender rolled back (its container runs on at the
//     source), so the container this receiver was restoring is deleted
//     (--force): a half-restored one (no state.json: the state directory,
//     the rootfs bind mount and the staged tmpfs CRIU's restore left) or a
//     restored, held one whose state.json was created after the session
//     began. A container of that id from before the session is kept.
//   - committed: the container is this node's; only the images go.
// In both cases tasks CRIU was still restoring from the session's images
// are killed (checkpoint/restore_guard.hpp: criu died with the receiver,
// they can never finish), with the cgroup of an uncommitted half-restored
// container. Then the directory goes.
#pragma once
#include <string>
#include <vector>

#include "container/create.hpp"

namespace crx::migrate {

// The marker (receiver.json) of a session directory.
void write_session_marker(const std::string& session_dir, const std::string& id, bool committed,
                          const std::string& began);

// Returns one line per thing removed (for the log).
std::vector<std::string> sweep_stale_sessions(const std::string& image_root,
                                              const container::GlobalOptions& g);

}  // namespace crx::migrate
