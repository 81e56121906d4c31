// The plugin's own image: one file per CRIU external file it claimed,
// "crx-verbs-<id>.img" in CRIU's images dir (<id>: CRIU's file id).
//
// Format (version 2, little endian, packed as written by encode()):
//   ImageHeader             magic "CRXV", version, kind, ...
//   kind Context:
//     QueueMap x nqueues    where each queue buffer was mapped at dump
//     dump_len bytes        ibv_dump_context() output (rxe_migr_abi.h)
//                           with each CQ's ring as its live window
//                           (IBV_MIGR_DUMP_CQ_WINDOWS, cq_window.hpp;
//                           version 1 had them whole)
//   kind Event:             nothing more: ctx_id names the context's
//                           image, evt_type/evt_handle its dump record
// A context image names the source device; the restore opens the device
// of that name on the destination (or its only device).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace crx::verbs_plugin {

inline constexpr uint32_t kImageVersion = 2;

enum class ImageKind : uint32_t { Context = 1, Event = 2 };

// A queue buffer of the dumped process: rxe_migr_queue_which + object
// handle, and the mmap offset its VMA has in the CRIU images.
struct QueueMap {
  uint32_t which = 0;
  uint32_t handle = 0;
  uint64_t offset = 0;
  uint64_t size = 0;
};

struct Image {
  ImageKind kind = ImageKind::Context;
  uint32_t ctx_id = 0;      // CRIU file id of the context's uverbs file
  uint32_t evt_type = 0;    // Event: RXE_MIGR_OBJ_ASYNC_EVENT / _COMP_CHANNEL
  uint32_t evt_handle = 0;  // Event: handle of its dump record
  std::string device;       // Context: ibv device name, e.g. "rxe0"
  std::string cdev_path;    // Context: "/dev/infiniband/uverbs0" at dump
  std::vector<QueueMap> queues;
  // Context: as the kernel dumps it with IBV_MIGR_DUMP_CQ_WINDOWS (each
  // CQ's ring as its live entries), to encode() and from decode()
  std::vector<uint8_t> dump;
};

// nullopt and *why set if a Context's dump is not one check_cq_windows()
// takes.
std::optional<std::vector<uint8_t>> encode(const Image& img, std::string* why);
// nullopt and *why set if the bytes are no valid image of this version
// (a Context's dump one that check_cq_windows() refuses included).
std::optional<Image> decode(const std::vector<uint8_t>& bytes, std::string* why);

std::string image_name(uint32_t id);

}  // namespace crx::verbs_plugin
