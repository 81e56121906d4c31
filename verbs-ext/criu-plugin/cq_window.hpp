// A CQ's ring in the plugin's image: only its live window.
//
// The kernel's dump (rxe_migr_abi.h) carries every ring whole. For a CQ
// only the entries in [consumer, producer) mean anything: the driver
// writes at the producer index and the library reads at the consumer
// index up to the producer (ibv_poll_cq and the ibv_start_poll family
// alike), so the other slots are completions already read or slots not
// yet written. UCX's four CQs are 2.7 MB of a rank's 4.5 MB dump and hold
// 0-2 completions at a freeze; the image carries the window instead, and
// the restore puts each entry back in its slot with the rest zero (a new
// CQ's ring is zeroed anyway).
//
// Send and receive rings (QP, SRQ) stay whole: librxe's ibv_wr_* API and
// ibv_post_recv write a WQE before they publish the producer index, so a
// thread frozen between the two has live entries the indices do not cover.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace crx::verbs_plugin {

// The dump with each CQ record's ring cut to its window (queue.data_len
// then = live entries x elem_size, entries in order from the consumer).
// nullopt and *why set if dump is not a well-formed dump whose CQ rings
// are whole with indices inside the ring.
std::optional<std::vector<uint8_t>> cut_cq_rings(const std::vector<uint8_t>& dump,
                                                 std::string* why);

// The inverse: each CQ's ring whole again, its window in place and the
// other slots zero. nullopt and *why set if a CQ record's ring is not
// exactly the window its indices describe, or the rings would be larger
// than rxe makes them.
std::optional<std::vector<uint8_t>> whole_cq_rings(const std::vector<uint8_t>& cut,
                                                   std::string* why);

}  // namespace crx::verbs_plugin
