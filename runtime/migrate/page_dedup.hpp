// The send side's page channel through a filter that leaves out the pages
// the destination holds already: CRIU's dump (or pre-dump) writes its page
// server protocol into one end of a socketpair, a crx thread reads it,
// and every page CRIU sends with data is compared (page_ledger.hpp) with
// what earlier rounds left at the destination. Unchanged runs go on as
// "in the parent image" records (CRIU's own PE_PARENT: no data, the
// destination's page server checks that its parent has them, the restore
// reads them there); changed ones as they came. Everything else of the
// protocol passes through, and the page server's answers go back to CRIU.
//
// Why: a page pinned for RDMA stays soft-dirty (page_ledger.hpp), so CRIU
// puts every registered page into every round, the frozen final round
// included; most of them have not changed since the pre-copy round.
//
// The other way round, for the final dump of a container with verbs
// objects: CRIU's own "in parent" records are not trusted there (the NIC's
// writes set no soft-dirty bit, task_memory.hpp), so the relay reads those
// pages from the frozen task, compares them the same way, and sends the
// ones whose content changed with their data.
//
// The protocol is CRIU's (criu/page-xfer.c): a header per command, `u32
// cmd` (command | flags << 16), `nr_pages`, `u64 vaddr`, `u64 dst_id`,
// then nr_pages * 4096 bytes for data records. nr_pages is u32 up to CRIU
// 4.1 and u64 from 4.2 (the header grows from 24 to 32 bytes), so the
// layout follows the source's CRIU version. Answers: 1 byte after OPEN2
// (whether the destination's round has a parent image for it), 4 after
// PARENT and after CLOSE or FORCE_CLOSE (the page server's status; CRIU
// given its socket, as crx does, ends with FORCE_CLOSE). The relay
// answers OPEN2 itself from the ledger, without waiting, and checks the
// page server's answer later: a round whose answers differ fails.
//
// One owner, one thread; the destructor stops and joins it on every path.
// The relay ends when CRIU closes its end; a failure on either side closes
// both, so CRIU's dump fails at once and the destination sees the end.
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "common/error.hpp"
#include "common/unique_fd.hpp"
#include "migrate/message_reader.hpp"
#include "migrate/page_ledger.hpp"
#include "migrate/task_memory.hpp"
#include "migrate/zero_runs.hpp"

namespace crx::migrate {

// The page server protocol's header as a CRIU version writes it.
enum class PageHeaderLayout { Criu3, Criu42 };
// CRIU 3.17 -> Criu3, 4.2 and later -> Criu42.
PageHeaderLayout page_header_layout(unsigned criu_major, unsigned criu_minor);

class PageDedupRelay {
 public:
  // Takes the page channel (blocking, connected to a `criu page-server`).
  // The ledger outlives the relay (one per migration, one relay per round).
  // criu_has_parent false: CRIU dumps without a parent (no --prev-images-dir),
  // so it is told that the destination's round has none, whatever the page
  // server answers: a dump told otherwise looks for the parent's inventory
  // to rule out pid reuse and fails without it (criu/mem.c,
  // detect_pid_reuse). The relay still leaves out unchanged pages where the
  // destination has a parent.
  // check_parent: the tasks' memory, when CRIU's "in parent" records for
  // task pages are to be checked against their content (above); it
  // outlives the relay. nullptr: CRIU's word stands.
  // zero_runs: the stream goes out in frames, pages of zeros as their
  // count (zero_runs.hpp); only where the destination decodes them.
  // compress: with zero_runs, each write's frames in an LZ4 frame where
  // that makes them smaller (zero_runs.hpp, "Compressed").
  PageDedupRelay(PageLedger& ledger, UniqueFd network, PageHeaderLayout layout,
                 bool criu_has_parent = true, TaskMemory* check_parent = nullptr,
                 bool zero_runs = false, bool compress = false);
  // The two sockets between CRIU and the relay, made before it: a CRIU
  // started ahead of its request (checkpoint::StartedDump) inherits its end
  // from the start. Stream sockets take the pages CRIU splices by
  // reference; Copying: a seqpacket pair that copies them as they are
  // spliced, for CRIU's read-mode pre-dump, which reuses the buffer it
  // spliced them from (message_reader.hpp). The copy costs CRIU's writes
  // CPU (tests/bench/mpi, Result 28), so it is made only for that.
  enum class Splice { ByReference, Copying };
  struct Ends {
    UniqueFd local, criu;
    static Ends make(Splice splice = Splice::ByReference);
  };
  PageDedupRelay(PageLedger& ledger, UniqueFd network, PageHeaderLayout layout, Ends ends,
                 bool criu_has_parent = true, TaskMemory* check_parent = nullptr,
                 bool zero_runs = false, bool compress = false);
  ~PageDedupRelay();
  PageDedupRelay(const PageDedupRelay&) = delete;
  PageDedupRelay& operator=(const PageDedupRelay&) = delete;

  // The end CRIU writes to (give its number to CRIU; it stays ours).
  int criu_end() const { return criu_.get(); }
  // After CRIU's call returned: waits for the relay to end; throws Error
  // if it failed. The round's figures.
  PageDedupStats finish();
  // Ends the relay now (both sockets shut down) and joins; idempotent.
  void stop();
  // The relay's own failure so far, if it failed (its cause and errno
  // kept). Where CRIU's call failed, this is what CRIU's "Broken pipe" on
  // the page channel does not say.
  std::optional<Error> failure();

 private:
  void run();
  void relay();
  void add(uint32_t cmd, uint64_t nr_pages, uint64_t vaddr, uint64_t dst_id);
  void check_parent_pages(uint32_t flags, uint64_t nr_pages, uint64_t vaddr, uint64_t dst_id);
  // Consecutive pages of one kind become one record: unchanged ones "in
  // parent", changed ones with their data (at most kMaxRunPages a record).
  void begin_run(uint64_t dst_id, uint64_t vaddr, uint32_t data_flags);
  void run_page(bool unchanged, const char* page);
  void end_run();
  void send_header(uint32_t cmd, uint64_t nr_pages, uint64_t vaddr, uint64_t dst_id);
  int32_t pass_answer(size_t len);  // the answer as CRIU's int32 (len 4)
  // Reads the page server's answers to the OPEN2s answered from the ledger;
  // throws Error (Cause::Invalid) where one differs.
  void check_open_answers();
  void flush();

  PageLedger& ledger_;
  UniqueFd network_, local_, criu_;
  MessageReader from_criu_;  // local_, a stream or CRIU's writes and pages as messages
  PageHeaderLayout layout_;
  bool criu_has_parent_;
  TaskMemory* check_parent_;
  struct Run {
    uint64_t dst_id = 0, start = 0, pages = 0;
    uint32_t data_flags = 0;
    bool unchanged = false;
    std::string data;
  } run_;
  // CRIU's pages are read into this, kChunkPages at a time: one buffer for
  // the relay, not a zero-filled 256 KiB per record (a round of scattered
  // dirty pages has a record every few pages, and a TCG guest fills memory
  // slowly).
  std::unique_ptr<char[]> chunk_;
  zero_runs::Encoder out_;   // bytes for the network: flushed before an answer, at
                             // kFlushAt, and whenever CRIU pauses
  bool has_parent_ = false;  // of the pagemap image open now
  uint64_t open_image_ = 0;
  struct OpenAnswer {
    uint64_t image;
    bool has_parent;  // the ledger's word, which the relay acted on
  };
  std::vector<OpenAnswer> open_answers_due_;  // in the page server's order
  bool closed_ = false;      // the page server confirmed the round (status 0)
  PageDedupStats stats_;
  std::atomic<bool> stopping_{false};
  std::mutex mutex_;
  std::string error_;             // what broke the relay, with its cause
  Cause error_cause_ = Cause::IO;  // a failure that was not a crx::Error: the channel's
  int error_errno_ = 0;
  std::thread thread_;
};

}  // namespace crx::migrate
