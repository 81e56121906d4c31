// A CQ's ring in the plugin's image: only its live window.
//
// Of a CQ's ring only the entries in [consumer, producer) mean anything:
// the driver writes at the producer index and the library reads at the
// consumer index up to the producer (ibv_poll_cq and the ibv_start_poll
// family alike), so the other slots are completions already read or
// slots not yet written. UCX's four CQs are 2.7 MB of a rank's 4.5 MB
// dump and hold 0-2 completions at a freeze. The plugin dumps with
// IBV_MIGR_DUMP_CQ_WINDOWS (rxe-patches 0027), so the kernel copies only
// the window, in order from the consumer; the image carries it as it is,
// and the restore refills with IBV_MIGR_RESTORE_CQ_WINDOW: libverbs-ext
// puts each entry back in its slot of the ring CREATE made (zeroed) and
// sends RESTORE_QUEUE only the chunks that hold one.
//
// Send and receive rings (QP, SRQ) stay whole: librxe's ibv_wr_* API and
// ibv_post_recv write a WQE before they publish the producer index, so a
// thread frozen between the two has live entries the indices do not cover.
#pragma once
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace crx::verbs_plugin {

// Whether dump is a well-formed dump whose CQ records carry exactly the
// windows their indices describe (queue.data_len = live entries x
// elem_size) in rings rxe makes; *why says what is not.
bool check_cq_windows(std::span<const uint8_t> dump, std::string* why);

}  // namespace crx::verbs_plugin
