// Everything one side of a crx-verbs-seq run owns: device, PD, one CQ, the
// QPs (and SRQ), the message buffer, and the set-up handshake with the peer.
#pragma once
#include <functional>
#include <memory>
#include <vector>

#include "seq/options.hpp"
#include "seq/verbs.hpp"

namespace crx::verbs_seq {

struct Session {
  // Declaration order is teardown order reversed: QPs go first, the device last.
  ContextPtr ctx;
  PdPtr pd;
  std::unique_ptr<CompletionQueue> cq;
  SrqPtr srq;
  std::unique_ptr<Buffer> buffer;
  // --mr-size: registered and written; with --mr-remote-write the sender's
  // is the source of its WRITEs and the receiver's their target
  std::unique_ptr<Buffer> extra_mr;
  std::vector<QpPtr> qps;

  QpSettings settings;
  LocalInfo local;
  std::vector<uint32_t> psns;  // our initial send PSN per QP
  // sender with --mr-remote-write: the receiver's MR (from the set-up)
  uint64_t remote_mr_addr = 0;
  uint32_t remote_mr_rkey = 0;

  // Slot i of the buffer holds one message; window slots per QP.
  char* slot(size_t i, size_t size) const { return buffer->data() + i * size; }
};

// What --mr-size memory is filled with (not zero: every page is a real,
// distinct-from-zero page wherever it is copied).
inline constexpr unsigned char kExtraFill = 0xa5;

// Opens the device and creates every object; QPs end up in INIT.
Session open_session(const Options& o);

// Swaps endpoints with the peer over TCP, moves every QP to RTS and waits
// until the peer is ready too. The TCP connection is closed on return.
void connect_session(Session& s, const Options& o);

}  // namespace crx::verbs_seq
