// The restore half of the plugin.
//
// In the restored task (RESTORE_EXT_FILE, UPDATE_VMA_MAP: both run in the
// process being restored, before CRIU's restorer puts its memory in place):
// the first file of a context recreates the context and every object with
// its original handle, number and keys (ibv_restore_object), refills the
// rings, leaves the QPs stopped and registers the MRs unpinned (their
// memory is not there yet); each queue buffer is made mappable again so
// that the restorer maps it at the process's old address.
//
// In CRIU's master (RESUME_DEVICES_LATE, the tasks' memory in place, the
// tasks still stopped): the uverbs file takes the task's final
// credentials, the MRs are pinned in the task's mm, and the QPs resume
// (their partners learn the new address) unless CRX_VERBS_DEFER_RESUME=1
// says the caller (crx, after a migration's commit) resumes them.
#pragma once
#include <infiniband/verbs.h>

#include <cstdint>
#include <map>
#include <string>

#include "image.hpp"

namespace crx::verbs_plugin {

class TaskRestorer {
 public:
  // The devices are looked up once in CRIU's master, before it forks the
  // tasks (in a task the root may already be the container's).
  explicit TaskRestorer(struct ibv_device** devices, int num_devices)
      : devices_(devices), num_devices_(num_devices) {}

  // RESTORE_EXT_FILE: the fd for CRIU file id, -ENOTSUP if not ours.
  int restore_file(uint32_t id);
  // UPDATE_VMA_MAP: 1 and the new offset + an fd of the uverbs file to
  // map, -ENOTSUP if not a uverbs mapping, else -errno.
  int update_vma(const char* path, uint64_t old_offset, uint64_t* new_offset, int* plugin_fd);

 private:
  struct Restored {
    Image img;
    std::string cdev_path;   // on this node
    int cmd_fd = -1;         // ours until handed to CRIU
    int async_fd = -1;       // ditto
    std::map<uint32_t, int> channel_fds;  // record handle -> fd, ditto
    std::map<uint64_t, uint64_t> offsets;  // mmap offset at dump -> now
    int task_fd = -1;        // the process's own fd of the file, once placed
  };
  // When a context's image load began and when its file had been read
  // (now_ms()): the load is part of the recreation's time.
  struct LoadTimes {
    double start = 0;
    double read = 0;
  };
  // Loads the context's image, then the overload below.
  int restore_context(uint32_t ctx_id);
  // Recreates the context of img (its image, loaded at times).
  int restore_context(uint32_t ctx_id, Image&& img, LoadTimes times);
  int find_task_fd(Restored& r);
  void close_leftovers(Restored& r);

  struct ibv_device** devices_;
  int num_devices_;
  std::map<uint32_t, Restored> contexts_;
};

// RESUME_DEVICES_LATE in CRIU's master for one restored process.
int late_resume(int pid);

// plugin_init's part (master, restore stage) for crx-verbs-restore.json:
// whether libibverbs' providers were loaded before it (crx preloads this
// plugin into a criu started ahead of a migration's images) and how long
// its ibv_get_device_list took.
void record_plugin_init(bool providers_preloaded, double init_ms);

}  // namespace crx::verbs_plugin
