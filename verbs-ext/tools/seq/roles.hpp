// The two halves of a run. Both return the summary; neither throws for a
// failure of the peer or the transport (those are counted as errors).
#pragma once
#include <functional>

#include "seq/options.hpp"
#include "seq/session.hpp"
#include "seq/summary.hpp"

namespace crx::verbs_seq {

// Posts every receive slot; call before connect_session.
void post_initial_receives(Session& s, const Options& o);
Summary run_receiver(Session& s, const Options& o);
Summary run_sender(Session& s, const Options& o);
// Idle: allocates and writes the receiver's memory (no device, no verbs
// object), calls ready(), then waits for --duration or a stop signal.
Summary run_idle(const Options& o, const std::function<void()>& ready);

}  // namespace crx::verbs_seq
