#include "migrate/page_dedup.hpp"

#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "common/error.hpp"
#include "common/retry_eintr.hpp"
#include "migrate/net.hpp"

namespace crx::migrate {

namespace {

// criu/page-xfer.c and criu/include/pagemap.h (3.17.1 to 4.2, unchanged).
constexpr uint32_t kIovAdd = 1, kIovHole = 2, kIovOpen = 3, kIovOpen2 = 4, kIovParent = 5,
                   kIovAddF = 6, kIovGet = 7;
constexpr uint32_t kIovClose = 0x1023, kIovForceClose = 0x1024;
constexpr uint32_t kCmdBits = 16, kCmdMask = (1u << kCmdBits) - 1;
constexpr uint64_t kTypeMask = 0xff, kTypePid = 1;  // dst_id = id << 8 | type
constexpr uint32_t kParent = 1u << 0, kLazy = 1u << 1, kPresent = 1u << 2;
constexpr size_t kPage = 4096;

constexpr size_t kChunkPages = 64;          // read and hashed at a time
constexpr size_t kMaxRunPages = 256;        // a data record's pages at most
constexpr size_t kFlushAt = 1024 * 1024;    // buffered for the network
// Sent in writes of kSmallRecord at most while a channel's congestion
// window is still small (flush()).
constexpr size_t kSlowStartBytes = 64 * 1024, kSmallRecord = 8 * 1024;

size_t header_size(PageHeaderLayout l) { return l == PageHeaderLayout::Criu3 ? 24 : 32; }

void write_all(int fd, const void* buf, size_t len, const char* what) {
  auto* p = static_cast<const char*>(buf);
  while (len > 0) {
    ssize_t n = retry_eintr([&] { return ::send(fd, p, len, MSG_NOSIGNAL); });
    if (n < 0) throw_errno(what);
    p += n;
    len -= static_cast<size_t>(n);
  }
}

template <typename T>
T load(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

template <typename T>
void store(char* p, T v) {
  std::memcpy(p, &v, sizeof v);
}

}  // namespace

PageHeaderLayout page_header_layout(unsigned major, unsigned minor) {
  return (major > 4 || (major == 4 && minor >= 2)) ? PageHeaderLayout::Criu42
                                                   : PageHeaderLayout::Criu3;
}

PageDedupRelay::Ends PageDedupRelay::Ends::make(Splice splice) {
  int sv[2];
  const int type = splice == Splice::Copying ? SOCK_SEQPACKET : SOCK_STREAM;
  if (::socketpair(AF_UNIX, type | SOCK_CLOEXEC, 0, sv) != 0)
    throw_errno("socketpair for the page channel");
  return Ends{UniqueFd(sv[0]), UniqueFd(sv[1])};
}

PageDedupRelay::PageDedupRelay(PageLedger& ledger, UniqueFd network, PageHeaderLayout layout,
                               bool criu_has_parent, TaskMemory* check_parent, bool zero_runs,
                               bool compress)
    : PageDedupRelay(ledger, std::move(network), layout, Ends::make(), criu_has_parent,
                     check_parent, zero_runs, compress) {}

PageDedupRelay::PageDedupRelay(PageLedger& ledger, UniqueFd network, PageHeaderLayout layout,
                               Ends ends, bool criu_has_parent, TaskMemory* check_parent,
                               bool zero_runs, bool compress)
    : ledger_(ledger), network_(std::move(network)), local_(std::move(ends.local)),
      criu_(std::move(ends.criu)), from_criu_(local_.get()), layout_(layout),
      criu_has_parent_(criu_has_parent), check_parent_(check_parent),
      chunk_(std::make_unique_for_overwrite<char[]>(kChunkPages * kPage)),
      out_(zero_runs, compress) {
  thread_ = std::thread([this] { run(); });
}

PageDedupRelay::~PageDedupRelay() { stop(); }

void PageDedupRelay::stop() {
  stopping_ = true;
  if (!thread_.joinable()) return;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (network_) ::shutdown(network_.get(), SHUT_RDWR);
  }
  ::shutdown(local_.get(), SHUT_RDWR);
  thread_.join();
}

PageDedupStats PageDedupRelay::finish() {
  // CRIU has returned: with our copy of its end closed, a CRIU that died
  // before its CLOSE shows as the end of the stream.
  criu_.reset();
  if (thread_.joinable()) thread_.join();
  std::lock_guard<std::mutex> lock(mutex_);
  if (!error_.empty()) throw Error(error_, error_cause_, error_errno_);
  stats_.zero_pages = out_.zero_pages();
  stats_.compressed_in = out_.compressed_in();
  stats_.compressed_out = out_.compressed_out();
  return stats_;
}

std::optional<Error> PageDedupRelay::failure() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (error_.empty()) return std::nullopt;
  return Error(error_, error_cause_, error_errno_);
}

void PageDedupRelay::run() {
  // Every write is a send(MSG_NOSIGNAL): a peer gone is an EPIPE, no signal.
  bool failed = false;
  try {
    relay();
    flush();
    // CRIU ended without closing its session: its failure is the round's.
    if (!closed_) ledger_.abandon_round();
  } catch (const std::exception& e) {
    failed = true;
    ledger_.abandon_round();
    std::lock_guard<std::mutex> lock(mutex_);
    if (!stopping_ && error_.empty()) {
      error_ = std::string("page filter: ") + e.what();
      if (const auto* err = dynamic_cast<const Error*>(&e)) {
        error_cause_ = err->cause();
        error_errno_ = err->sys_errno();
      }
    }
  }
  // CRIU sees the end of its socket, and after a failure the destination
  // sees the end of the channel at once.
  ::shutdown(local_.get(), SHUT_RDWR);
  std::lock_guard<std::mutex> lock(mutex_);
  if (failed && network_) ::shutdown(network_.get(), SHUT_RDWR);
  network_.reset();
  timespec cpu{};
  if (::clock_gettime(CLOCK_THREAD_CPUTIME_ID, &cpu) == 0)
    stats_.cpu_seconds = double(cpu.tv_sec) + double(cpu.tv_nsec) / 1e9;
}

void PageDedupRelay::relay() {
  const size_t hsize = header_size(layout_);
  std::vector<char> h(hsize);
  while (!stopping_) {
    // What is buffered goes out whenever CRIU pauses (collecting the next
    // task's pages, writing its other images): the page server works on it
    // meanwhile, not after the CLOSE that CRIU's dump waits for.
    if (!out_.wire().empty() && !from_criu_.readable_now()) flush();
    if (!from_criu_.read_exact(h.data(), hsize, "reading CRIU's page stream", true)) return;
    const uint32_t cmd = load<uint32_t>(h.data());
    uint64_t nr_pages, vaddr, dst_id;
    if (layout_ == PageHeaderLayout::Criu3) {
      nr_pages = load<uint32_t>(h.data() + 4);
      vaddr = load<uint64_t>(h.data() + 8);
      dst_id = load<uint64_t>(h.data() + 16);
    } else {
      nr_pages = load<uint64_t>(h.data() + 8);
      vaddr = load<uint64_t>(h.data() + 16);
      dst_id = load<uint64_t>(h.data() + 24);
    }
    if (cmd == kIovClose || cmd == kIovForceClose) {
      // CRIU given its socket (--ps-socket, as crx does) ends with
      // FORCE_CLOSE, otherwise CLOSE; both ask the page server for its
      // status, zero once it has written the round. CRIU hears zero at
      // once and finishes its dump (the final one inside the frozen
      // window) while the close crosses to the page server and its answer
      // comes back, 10-20 ms in a test-bed guest. That answer decides the
      // round: any other makes finish() throw, so a dump CRIU took for
      // whole still fails, and the migration rolls back.
      out_.bytes(h.data(), hsize);
      flush();
      const int32_t done = 0;
      write_all(local_.get(), reinterpret_cast<const char*>(&done), sizeof done, "answering CRIU");
      check_open_answers();
      char answer[4] = {};
      read_answer(network_.get(), answer, sizeof answer, "reading the page server's answer");
      if (const int32_t status = load<int32_t>(answer); status != 0)
        throw Error("the destination's page server ended the round with status " +
                        std::to_string(status),
                    Cause::Peer);
      ledger_.end_round();
      closed_ = true;
      return;
    }
    switch (cmd & kCmdMask) {
      case kIovOpen:  // no answer; the destination's parent is unknown
        out_.bytes(h.data(), hsize);
        ledger_.opened(dst_id);
        open_image_ = dst_id;
        has_parent_ = false;
        break;
      case kIovOpen2: {
        // The page server answers whether its round has a parent image for
        // dst_id: it has one exactly when the previous round opened it.
        // CRIU hears that from the ledger at once instead of after a round
        // trip and the page server's opening of its parent images (13-41
        // ms per task in a test-bed guest, in the frozen window for the
        // final dump); the page server's own answer is checked when the
        // relay next reads from it (check_open_answers).
        out_.bytes(h.data(), hsize);
        flush();  // the page server starts opening its parent images now
        const bool has_parent = ledger_.opened(dst_id);
        const char to_criu = criu_has_parent_ && has_parent ? 1 : 0;
        write_all(local_.get(), &to_criu, 1, "answering CRIU");
        open_answers_due_.push_back(OpenAnswer{dst_id, has_parent});
        open_image_ = dst_id;
        has_parent_ = has_parent;
        break;
      }
      case kIovParent:
        out_.bytes(h.data(), hsize);
        pass_answer(4);
        break;
      case kIovAdd:
      case kIovHole:
      case kIovAddF:
        add(cmd, nr_pages, vaddr, dst_id);
        break;
      case kIovGet:
      default:
        throw Error("CRIU sent page server command " + std::to_string(cmd) +
                        ", which a dump's page channel does not carry",
                    Cause::Invalid);
    }
  }
}

void PageDedupRelay::add(uint32_t cmd, uint64_t nr_pages, uint64_t vaddr, uint64_t dst_id) {
  const uint32_t op = cmd & kCmdMask;
  const uint32_t flags = op == kIovAddF ? cmd >> kCmdBits : op == kIovAdd ? kPresent : kParent;
  const bool task_pages = (dst_id & kTypeMask) == kTypePid;
  // Task pages of the image open now, where the destination's round has a
  // parent: the ones to compare with what that parent holds.
  const bool comparable = task_pages && has_parent_ && dst_id == open_image_;
  if (!(flags & kPresent)) {
    if (comparable && check_parent_ && (flags & kParent) && !(flags & ~(kParent | kLazy))) {
      check_parent_pages(flags, nr_pages, vaddr, dst_id);
      return;
    }
    send_header(cmd, nr_pages, vaddr, dst_id);
    if (task_pages && (flags & kParent))
      for (uint64_t i = 0; i < nr_pages; i++) ledger_.carry(dst_id, vaddr + i * kPage);
    return;
  }
  // Pages with data. Task memory is hashed into the ledger, and sent as
  // "in parent" where the destination's round has a parent. CRIU marks
  // every page of a VMA that could be restored lazily PE_LAZY, in plain
  // dumps too (criu/mem.c; only a lazy restore reads the flag): such pages
  // count as plain ones, and a changed run keeps the flags CRIU gave it.
  // Flags beyond those, and shared memory, pass through as they came.
  const bool record = task_pages && (flags & ~kLazy) == kPresent;
  const bool rewrite = record && comparable;
  if (rewrite)
    begin_run(dst_id, vaddr, flags);
  else
    send_header(cmd, nr_pages, vaddr, dst_id);

  char* const chunk = chunk_.get();
  for (uint64_t done = 0; done < nr_pages;) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(kChunkPages, nr_pages - done));
    from_criu_.read_exact(chunk, n * kPage, "reading CRIU's pages");
    stats_.pages_in += n;
    if (!rewrite) {
      if (record)
        for (size_t i = 0; i < n; i++)
          ledger_.unchanged(dst_id, vaddr + (done + i) * kPage, hash_page(&chunk[i * kPage], kPage));
      for (size_t i = 0; i < n; i++) out_.page(&chunk[i * kPage]);
      if (out_.wire().size() >= kFlushAt) flush();
      done += n;
      continue;
    }
    for (size_t i = 0; i < n; i++) {
      const char* page = &chunk[i * kPage];
      const bool same = ledger_.unchanged(dst_id, vaddr + (done + i) * kPage, hash_page(page, kPage));
      if (same) stats_.pages_unchanged++;
      run_page(same, page);
    }
    done += n;
  }
  if (rewrite) end_run();
}

// CRIU found these pages unchanged since its parent (soft-dirty bit
// clear). They are read from the frozen task and compared like pages with
// data; a page the task cannot read is no memory a device can have pinned,
// and CRIU's word stands for it.
void PageDedupRelay::check_parent_pages(uint32_t flags, uint64_t nr_pages, uint64_t vaddr,
                                        uint64_t dst_id) {
  const uint64_t task = dst_id >> 8;
  begin_run(dst_id, vaddr, kPresent | (flags & kLazy));
  char* const chunk = chunk_.get();
  for (uint64_t done = 0; done < nr_pages;) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(kChunkPages, nr_pages - done));
    const uint64_t at = vaddr + done * kPage;
    const bool whole = check_parent_->read(task, at, chunk, n * kPage);
    for (size_t i = 0; i < n; i++) {
      const uint64_t addr = at + i * kPage;
      char* page = &chunk[i * kPage];
      bool same;
      if (whole || check_parent_->read(task, addr, page, kPage)) {
        stats_.parent_pages_checked++;
        same = ledger_.unchanged(dst_id, addr, hash_page(page, kPage));
        if (!same) stats_.parent_pages_changed++;
      } else {
        ledger_.carry(dst_id, addr);
        same = true;
      }
      run_page(same, page);
    }
    done += n;
  }
  end_run();
}

void PageDedupRelay::begin_run(uint64_t dst_id, uint64_t vaddr, uint32_t data_flags) {
  run_.dst_id = dst_id;
  run_.start = vaddr;
  run_.pages = 0;
  run_.data_flags = data_flags;
  run_.unchanged = false;
  run_.data.clear();  // keeps its buffer: a round has a run per record
}

void PageDedupRelay::run_page(bool unchanged, const char* page) {
  if (run_.pages > 0 &&
      (unchanged != run_.unchanged || (!unchanged && run_.pages == kMaxRunPages)))
    end_run();
  run_.unchanged = unchanged;
  run_.pages++;
  if (!unchanged) run_.data.append(page, kPage);
}

void PageDedupRelay::end_run() {
  if (run_.pages == 0) return;
  if (run_.unchanged) {
    send_header(kIovAddF | (kParent << kCmdBits), run_.pages, run_.start, run_.dst_id);
  } else {
    send_header(kIovAddF | (run_.data_flags << kCmdBits), run_.pages, run_.start, run_.dst_id);
    for (size_t off = 0; off < run_.data.size(); off += kPage) out_.page(&run_.data[off]);
    run_.data.clear();
  }
  run_.start += run_.pages * kPage;
  run_.pages = 0;
  if (out_.wire().size() >= kFlushAt) flush();
}

void PageDedupRelay::send_header(uint32_t cmd, uint64_t nr_pages, uint64_t vaddr, uint64_t dst_id) {
  char h[32] = {};
  store<uint32_t>(h, cmd);
  if (layout_ == PageHeaderLayout::Criu3) {
    store<uint32_t>(h + 4, static_cast<uint32_t>(nr_pages));
    store<uint64_t>(h + 8, vaddr);
    store<uint64_t>(h + 16, dst_id);
  } else {
    store<uint64_t>(h + 8, nr_pages);
    store<uint64_t>(h + 16, vaddr);
    store<uint64_t>(h + 24, dst_id);
  }
  out_.bytes(h, header_size(layout_));
}

void PageDedupRelay::check_open_answers() {
  for (const OpenAnswer& due : open_answers_due_) {
    char has_parent = 0;
    read_answer(network_.get(), &has_parent, 1, "reading the page server's answer");
    if ((has_parent != 0) != due.has_parent) {
      throw Error("the destination's page server " +
                      std::string(has_parent ? "has" : "has no") + " parent image for pagemap " +
                      std::to_string(due.image) + ", where the previous round " +
                      (due.has_parent ? "left one" : "left none"),
                  Cause::Invalid);
    }
  }
  open_answers_due_.clear();
}

int32_t PageDedupRelay::pass_answer(size_t len) {
  flush();
  check_open_answers();
  char answer[4] = {};
  read_answer(network_.get(), answer, len, "reading the page server's answer");
  write_all(local_.get(), answer, len, "answering CRIU");
  return load<int32_t>(answer);
}

void PageDedupRelay::flush() {
  if (out_.wire().empty()) return;
  const std::string& wire = out_.seal();
  // A channel's first bytes go in small writes, so in small TLS records
  // (kernel TLS makes one per send, up to 16 KiB): a new connection may
  // send 10 segments (~14 KiB) before its first ACK, and the receiver, whose
  // TLS cannot hand on part of a record, holds that ACK back for its
  // delayed-ACK timer (40 ms) while the record's tail waits on it. That was
  // 40-50 ms of every round's close, the final one's in the frozen window
  // (README.md, "A round's last pages, in small records").
  size_t off = 0;
  while (off < wire.size() && stats_.bytes_out + off < kSlowStartBytes) {
    const size_t n = std::min(kSmallRecord, wire.size() - off);
    write_all(network_.get(), wire.data() + off, n, "sending pages");
    off += n;
  }
  if (off < wire.size()) write_all(network_.get(), wire.data() + off, wire.size() - off, "sending pages");
  stats_.bytes_out += wire.size();
  out_.clear();
}

}  // namespace crx::migrate
