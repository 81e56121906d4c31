// A SOCK_SEQPACKET socket read as a byte stream (a SOCK_STREAM one too:
// the page filter reads either, PageDedupRelay::Splice).
//
// For CRIU's read-mode pre-dump the page channel is a unix SOCK_SEQPACKET
// socketpair, not a stream one, because of how that mode hands over its
// pages: it reads a batch of them with process_vm_readv into one buffer,
// vmsplices that buffer into a pipe and splices the pipe into the page
// channel, then reads the next batch into the same buffer. A stream
// socket (unix or TCP) takes spliced pages by reference (6.1's sendpage:
// the skb holds the page), so pages still queued for crx when the next
// batch is read arrive with the next batch's bytes. A seqpacket socket
// has no sendpage of its own and copies each page into its message as it
// is spliced.
//
// Its price is message boundaries: each splice of a page is one message,
// each of CRIU's writes another, and a read that asks for less than a
// message drops the rest. MessageReader receives whole messages and hands
// them out as the bytes a stream reader asks for.
#pragma once
#include <cstddef>
#include <memory>

namespace crx::migrate {

class MessageReader {
 public:
  // fd stays the caller's. max_message: the longest message the writer
  // sends; one longer is an Error (Cause::Invalid), never cut silently.
  explicit MessageReader(int fd, size_t max_message = 64 * 1024);

  // Reads exactly len bytes. false on the end of the stream before the
  // first byte when at_boundary (the writer is done); Error (Cause::IO)
  // on an end inside, and with errno on a failed read (`what` says of what).
  bool read_exact(void* buf, size_t len, const char* what, bool at_boundary = false);
  // Whether a read_exact would not block now for its first byte.
  bool readable_now();

 private:
  // One message into the buffer; false at the end of the stream.
  bool receive(const char* what);

  int fd_;
  size_t max_message_;
  std::unique_ptr<char[]> buf_;
  size_t begin_ = 0, end_ = 0;  // what of buf_ is not handed out yet
};

}  // namespace crx::migrate
