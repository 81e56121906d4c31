// The sender's page filter between a CRIU dump and the destination's page
// server: real sockets on both sides, CRIU's protocol written and read the
// way criu/page-xfer.c does (3.17's 24-byte header and 4.2's 32-byte one).
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cerrno>
#include <cstring>
#include <ostream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <optional>
#include <set>

#include "common/error.hpp"
#include "common/unique_fd.hpp"
#include "migrate/page_dedup.hpp"
#include "migrate/page_ledger.hpp"
#include "migrate/page_relay.hpp"
#include "migrate/task_memory.hpp"
#include "migrate/written_task_memory.hpp"

namespace crx::migrate {
// How gtest (and the ctest names made from it) shows a layout.
void PrintTo(PageHeaderLayout l, std::ostream* os) {
  *os << (l == PageHeaderLayout::Criu3 ? "criu3" : "criu42");
}
}  // namespace crx::migrate

namespace {

using crx::UniqueFd;
using crx::migrate::PageDedupRelay;
using crx::migrate::PageDedupStats;
using crx::migrate::PageHeaderLayout;
using crx::migrate::PageLedger;
using crx::migrate::PageRelay;
using crx::migrate::TaskMemory;

constexpr uint32_t kOpen2 = 4, kParentQuery = 5, kAddF = 6, kClose = 0x1023, kForceClose = 0x1024;
constexpr uint32_t kParent = 1, kLazy = 2, kPresent = 4;
constexpr uint64_t kTask = 7 << 8 | 1;   // pagemap of task 7
constexpr uint64_t kShmem = 9 << 8 | 2;  // a shared memory segment's pagemap
constexpr uint64_t kBase = 0x7f0000000000;
constexpr size_t kPage = 4096;

std::string page(char fill) { return std::string(kPage, fill); }

struct Record {
  uint32_t flags;
  uint64_t vaddr, pages, dst;
  std::string data;
  bool operator==(const Record&) const = default;
};

std::ostream& operator<<(std::ostream& o, const Record& r) {
  return o << "{flags " << r.flags << ", vaddr +" << (r.vaddr - kBase) / kPage << ", pages "
           << r.pages << ", dst " << r.dst << ", data " << r.data.size() / kPage << " pages}";
}

size_t header_size(PageHeaderLayout l) { return l == PageHeaderLayout::Criu3 ? 24 : 32; }

std::string header(PageHeaderLayout l, uint32_t cmd, uint64_t pages, uint64_t vaddr, uint64_t dst) {
  std::string h(header_size(l), '\0');
  std::memcpy(h.data(), &cmd, 4);
  if (l == PageHeaderLayout::Criu3) {
    uint32_t n = static_cast<uint32_t>(pages);
    std::memcpy(h.data() + 4, &n, 4);
    std::memcpy(h.data() + 8, &vaddr, 8);
    std::memcpy(h.data() + 16, &dst, 8);
  } else {
    std::memcpy(h.data() + 8, &pages, 8);
    std::memcpy(h.data() + 16, &vaddr, 8);
    std::memcpy(h.data() + 24, &dst, 8);
  }
  return h;
}

// In sends of a page at most: CRIU's end of the relay is a seqpacket socket
// (one message a send, as a page CRIU splices is), and these messages
// cross the records' boundaries, which the relay must not care about.
void write_all(int fd, const std::string& s) {
  size_t off = 0;
  while (off < s.size()) {
    ssize_t n = ::send(fd, s.data() + off, std::min<size_t>(s.size() - off, kPage), MSG_NOSIGNAL);
    if (n <= 0) throw crx::Error("test: write failed");
    off += static_cast<size_t>(n);
  }
}

bool read_all(int fd, char* buf, size_t len) {
  size_t got = 0;
  while (got < len) {
    ssize_t n = ::read(fd, buf + got, len - got);
    if (n <= 0) return false;
    got += static_cast<size_t>(n);
  }
  return true;
}

// The destination's `criu page-server`, as far as the filter can tell:
// answers OPEN2 (has_parent, but not for the images without_parent),
// PARENT and CLOSE, keeps every ADD_F.
struct FakePageServer {
  PageHeaderLayout layout;
  bool has_parent;
  int fail_after_records = -1;  // closes the channel after that many
  int32_t status_at_close = 0;
  std::set<uint64_t> without_parent;
  // Answers an OPEN2 only once more of the stream came (or after 2 s): a
  // page server still opening its parent images.
  bool slow_open = false;
  bool stream_went_on_before_answer = false;
  std::function<void()> before_close_answer;  // runs before the close is answered
  std::vector<Record> records;
  bool closed = false;
  std::thread t;

  void start(UniqueFd fd) {
    t = std::thread([this, fd = std::move(fd)] {
      try {
        serve(fd.get());
      } catch (const crx::Error&) {
        // The relay hung up (it failed the round): an answer found no one.
      }
    });
  }
  void serve(int fd) {
    const size_t hs = header_size(layout);
    std::vector<char> h(hs);
    while (read_all(fd, h.data(), hs)) {
      uint32_t cmd;
      uint64_t pages = 0, vaddr, dst;
      std::memcpy(&cmd, h.data(), 4);
      if (layout == PageHeaderLayout::Criu3) {
        uint32_t n;
        std::memcpy(&n, h.data() + 4, 4);
        pages = n;
        std::memcpy(&vaddr, h.data() + 8, 8);
        std::memcpy(&dst, h.data() + 16, 8);
      } else {
        std::memcpy(&pages, h.data() + 8, 8);
        std::memcpy(&vaddr, h.data() + 16, 8);
        std::memcpy(&dst, h.data() + 24, 8);
      }
      if (cmd == kClose || cmd == kForceClose) {
        if (before_close_answer) before_close_answer();
        int32_t status = status_at_close;
        write_all(fd, std::string(reinterpret_cast<char*>(&status), 4));
        closed = true;
        return;
      }
      if ((cmd & 0xffff) == kOpen2) {
        if (slow_open) {
          pollfd p{fd, POLLIN, 0};
          stream_went_on_before_answer = ::poll(&p, 1, 2000) == 1;
        }
        write_all(fd, std::string(1, has_parent && !without_parent.contains(dst) ? 1 : 0));
        continue;
      }
      if ((cmd & 0xffff) == kParentQuery) {
        int32_t yes = 1;
        write_all(fd, std::string(reinterpret_cast<char*>(&yes), 4));
        continue;
      }
      Record r{cmd >> 16, vaddr, pages, dst, {}};
      if (r.flags & kPresent) {
        r.data.resize(pages * kPage);
        if (!read_all(fd, r.data.data(), r.data.size())) return;
      }
      records.push_back(std::move(r));
      if (fail_after_records >= 0 && static_cast<int>(records.size()) >= fail_after_records) {
        ::shutdown(fd, SHUT_RDWR);
        return;
      }
    }
  }
  void join() {
    if (t.joinable()) t.join();
  }
};

// One round: CRIU's side writes `criu_stream` (answers read where CRIU
// reads them), the filter relays it to a FakePageServer.
struct Round {
  std::vector<Record> at_destination;
  PageDedupStats stats;
  bool closed = false;
  std::vector<std::string> answers_to_criu;  // in order
  std::string decoder_error;                  // zero_runs: the PageRelay's
  uint64_t zero_bytes_decoded = 0;
  bool stream_went_on_before_open_answer = false;  // FakePageServer::slow_open
};

struct CriuWrites {
  PageHeaderLayout layout = PageHeaderLayout::Criu3;
  // The channel CRIU writes into: stream, or seqpacket (one message a send).
  PageDedupRelay::Splice splice = PageDedupRelay::Splice::ByReference;
  std::string bytes;
  // Where CRIU waits for an answer: after OPEN2 (1 byte), CLOSE (4).
  std::vector<std::pair<size_t, size_t>> answers;  // (offset in bytes, answer size)

  CriuWrites& open2(uint64_t dst) {
    bytes += header(layout, kOpen2, 0, 0, dst);
    answers.push_back({bytes.size(), 1});
    return *this;
  }
  CriuWrites& parent_query(uint64_t dst) {
    bytes += header(layout, kParentQuery, 0, 0, dst);
    answers.push_back({bytes.size(), 4});
    return *this;
  }
  CriuWrites& add(uint32_t flags, uint64_t first_page, const std::string& data, uint64_t dst = kTask,
                  uint64_t pages = 0) {
    if (pages == 0) pages = data.size() / kPage;
    bytes += header(layout, kAddF | flags << 16, pages, kBase + first_page * kPage, dst);
    bytes += data;
    return *this;
  }
  // CRIU given its socket (--ps-socket, as crx runs it) ends with
  // FORCE_CLOSE; one that connected itself, with CLOSE.
  CriuWrites& close(bool force = true) {
    bytes += header(layout, force ? kForceClose : kClose, 0, 0, 0);
    answers.push_back({bytes.size(), 4});
    return *this;
  }
};

// The frozen tasks' memory: page by page, the rest unreadable.
struct FakeTaskMemory : TaskMemory {
  std::map<uint64_t, std::map<uint64_t, std::string>> pages;  // vpid -> vaddr -> page
  int reads = 0;
  bool read(uint64_t vpid, uint64_t vaddr, void* buf, size_t len) override {
    reads++;
    auto task = pages.find(vpid);
    if (task == pages.end()) throw crx::Error("no task " + std::to_string(vpid), crx::Cause::NotFound);
    for (size_t off = 0; off < len; off += kPage) {
      auto p = task->second.find(vaddr + off);
      if (p == task->second.end()) return false;
      std::memcpy(static_cast<char*>(buf) + off, p->second.data(), kPage);
    }
    return true;
  }
};

// zero_runs: the channel in frames (zero_runs.hpp), decoded by the
// destination's PageRelay in front of the page server, as crx receive does;
// compress: those frames compressed where that pays.
// server_setup: changes the page server before it starts.
Round run_round(PageLedger& ledger, const CriuWrites& w, bool has_parent,
                int server_fails_after = -1, int32_t status_at_close = 0,
                bool criu_has_parent = true, TaskMemory* memory = nullptr,
                bool zero_runs = false,
                const std::function<void(FakePageServer&)>& server_setup = {},
                const std::function<void()>& criu_got_close_answer = {},
                bool compress = false) {
  int net[2];
  EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, net), 0);
  FakePageServer server{w.layout, has_parent, server_fails_after, status_at_close};
  if (server_setup) server_setup(server);
  std::optional<PageRelay> decoder;
  if (zero_runs) {
    decoder.emplace(UniqueFd(net[1]), PageRelay::Mode::Splice, PageRelay::OnEnd::Close,
                    PageRelay::Framing::ZeroRuns);
    server.start(decoder->take_peer_end());
  } else {
    server.start(UniqueFd(net[1]));
  }
  Round r;
  {
    PageDedupRelay relay(ledger, UniqueFd(net[0]), w.layout,
                         PageDedupRelay::Ends::make(w.splice), criu_has_parent, memory, zero_runs,
                         compress);
    // CRIU: writes its stream, reading each answer where it waits for one.
    std::thread criu([&, fd = relay.criu_end()] {
      size_t off = 0;
      try {
        for (auto [at, len] : w.answers) {
          write_all(fd, w.bytes.substr(off, at - off));
          std::string answer(len, '\0');
          if (!read_all(fd, answer.data(), len)) return;
          r.answers_to_criu.push_back(answer);
          if (len == 4 && criu_got_close_answer && at == w.bytes.size()) criu_got_close_answer();
          off = at;
        }
        write_all(fd, w.bytes.substr(off));
      } catch (const crx::Error&) {
        // the filter failed and closed CRIU's end: CRIU's dump fails
      }
    });
    criu.join();
    try {
      r.stats = relay.finish();
    } catch (...) {
      relay.stop();
      server.join();
      throw;
    }
  }
  server.join();
  if (decoder) {
    decoder->stop();
    r.decoder_error = decoder->error();
    r.zero_bytes_decoded = decoder->zero_bytes();
  }
  r.at_destination = server.records;
  r.closed = server.closed;
  r.stream_went_on_before_open_answer = server.stream_went_on_before_answer;
  return r;
}

Record present(uint64_t first_page, const std::string& data, uint64_t dst = kTask) {
  return {kPresent, kBase + first_page * kPage, data.size() / kPage, dst, data};
}
Record in_parent(uint64_t first_page, uint64_t pages, uint64_t dst = kTask) {
  return {kParent, kBase + first_page * kPage, pages, dst, {}};
}

// Every case for both of CRIU's header layouts and both kinds of channel.
struct Channel {
  PageHeaderLayout layout;
  PageDedupRelay::Splice splice;
  operator PageHeaderLayout() const { return layout; }
};

class PageDedupTest : public ::testing::TestWithParam<Channel> {
 protected:
  CriuWrites criu() {
    CriuWrites w;
    w.layout = GetParam().layout;
    w.splice = GetParam().splice;
    return w;
  }
  PageLedger ledger;
};

TEST_P(PageDedupTest, FirstRoundGoesAsItCame) {
  std::string data = page('a') + page('b') + page('c');
  auto r = run_round(ledger, criu().open2(kTask).add(kPresent, 0, data).close(), false);
  EXPECT_TRUE(r.closed);
  EXPECT_EQ(r.at_destination, std::vector<Record>{present(0, data)});
  EXPECT_EQ(r.stats.pages_in, 3u);
  EXPECT_EQ(r.stats.pages_unchanged, 0u);
  EXPECT_EQ(ledger.known_pages(), 3u);
}

TEST_P(PageDedupTest, UnchangedPagesGoAsInParentChangedOnesWithData) {
  run_round(ledger, criu().open2(kTask).add(kPresent, 0, page('a') + page('b') + page('c') + page('d')).close(),
            false);
  // Round 2: CRIU dumps all four again (pinned pages stay soft-dirty); only
  // the second changed.
  auto r = run_round(
      ledger, criu().open2(kTask).add(kPresent, 0, page('a') + page('B') + page('c') + page('d')).close(),
      true);
  EXPECT_EQ(r.at_destination,
            (std::vector<Record>{in_parent(0, 1), present(1, page('B')), in_parent(2, 2)}));
  EXPECT_EQ(r.stats.pages_in, 4u);
  EXPECT_EQ(r.stats.pages_unchanged, 3u);
  // What went on the wire: three headers and one page.
  EXPECT_EQ(r.stats.bytes_out, 2 * header_size(GetParam()) + 3 * header_size(GetParam()) + kPage);
}

TEST_P(PageDedupTest, ComparesWithTheLatestContentThroughCriusOwnHoles) {
  run_round(ledger, criu().open2(kTask).add(kPresent, 0, page('a') + page('b')).close(), false);
  // Round 2: CRIU itself says page 0 is in the parent; page 1 changed.
  run_round(ledger, criu().open2(kTask).add(kParent, 0, "", kTask, 1).add(kPresent, 1, page('x')).close(),
            true);
  // Round 3: both dumped again. Page 0 is still 'a' (carried through
  // round 2's hole), page 1 is 'x' (round 2's data), so neither goes.
  auto r = run_round(ledger, criu().open2(kTask).add(kPresent, 0, page('a') + page('x')).close(), true);
  EXPECT_EQ(r.at_destination, std::vector<Record>{in_parent(0, 2)});
  // Round 4: page 1 back to 'b' is a change against the destination.
  r = run_round(ledger, criu().open2(kTask).add(kPresent, 0, page('a') + page('b')).close(), true);
  EXPECT_EQ(r.at_destination, (std::vector<Record>{in_parent(0, 1), present(1, page('b'))}));
}

TEST_P(PageDedupTest, APageARoundDidNotMentionIsSentWithData) {
  run_round(ledger, criu().open2(kTask).add(kPresent, 0, page('a') + page('b')).close(), false);
  // Round 2 mentions only page 0 (page 1 unmapped meanwhile): the
  // destination's round 2 has no entry for page 1.
  run_round(ledger, criu().open2(kTask).add(kPresent, 0, page('a')).close(), true);
  auto r = run_round(ledger, criu().open2(kTask).add(kPresent, 0, page('a') + page('b')).close(), true);
  EXPECT_EQ(r.at_destination, (std::vector<Record>{in_parent(0, 1), present(1, page('b'))}));
}

// A task the previous round did not have (a new process; its vpid's
// pagemap was not opened then): the destination has no parent image for
// it, so nothing of it is left out, equal content or not.
TEST_P(PageDedupTest, WithoutAParentAtTheDestinationNothingIsLeftOut) {
  static constexpr uint64_t kOtherTask = 8 << 8 | 1;
  run_round(ledger, criu().open2(kTask).add(kPresent, 0, page('a')).close(), false);
  auto r = run_round(ledger,
                     criu().open2(kOtherTask).add(kPresent, 0, page('a'), kOtherTask).close(),
                     true, -1, 0, true, nullptr, false,
                     [](FakePageServer& s) { s.without_parent.insert(kOtherTask); });
  EXPECT_EQ(r.at_destination, std::vector<Record>{present(0, page('a'), kOtherTask)});
  ASSERT_FALSE(r.answers_to_criu.empty());
  EXPECT_EQ(r.answers_to_criu[0], std::string(1, '\0'));
}

// The relay answers CRIU's OPEN2 from the ledger; a page server that says
// otherwise (here: no parent where the previous round left one) fails the
// round before anything of it counts, with its cause.
TEST_P(PageDedupTest, APageServerThatContradictsTheLedgerFailsTheRound) {
  run_round(ledger, criu().open2(kTask).add(kPresent, 0, page('a')).close(), false);
  try {
    run_round(ledger, criu().open2(kTask).add(kPresent, 0, page('a')).close(), false);
    FAIL() << "the round passed";
  } catch (const crx::Error& e) {
    EXPECT_EQ(e.cause(), crx::Cause::Invalid) << e.what();
    EXPECT_NE(std::string(e.what()).find("has no parent image for pagemap"), std::string::npos)
        << e.what();
  }
  EXPECT_EQ(ledger.known_pages(), 1u);  // round 1's, untouched
  // And the other way round: a parent the ledger knows nothing of.
  PageLedger fresh;
  EXPECT_THROW(run_round(fresh, criu().open2(kTask).add(kPresent, 0, page('a')).close(), true),
               crx::Error);
}

// A dump CRIU runs without a parent while the destination's round has one
// (crx's final dump of a container with verbs objects, until it checked
// CRIU's parent pages instead): CRIU must hear "no parent" (else it looks
// for the parent's inventory and fails), and unchanged pages still stay
// behind.
TEST_P(PageDedupTest, CriuWithoutAParentIsToldThereIsNoneButUnchangedPagesStayBehind) {
  std::string a = page('a'), b = page('b');
  run_round(ledger, criu().open2(kTask).add(kPresent, 0, a + b).close(), false);
  auto r = run_round(ledger, criu().open2(kTask).add(kPresent, 0, a + page('B')).close(), true,
                     -1, 0, false);
  ASSERT_FALSE(r.answers_to_criu.empty());
  EXPECT_EQ(r.answers_to_criu[0], std::string(1, '\0'));
  EXPECT_EQ(r.at_destination, (std::vector<Record>{in_parent(0, 1), present(1, page('B'))}));
  EXPECT_EQ(r.stats.pages_unchanged, 1u);
}

// With its parent, CRIU hears what the page server answers: no parent in
// the first round, one for the same task in the next.
TEST_P(PageDedupTest, CriuWithAParentHearsWhetherTheDestinationHasOne) {
  auto r = run_round(ledger, criu().open2(kTask).add(kPresent, 0, page('a')).close(), false);
  ASSERT_FALSE(r.answers_to_criu.empty());
  EXPECT_EQ(r.answers_to_criu[0], std::string(1, '\0'));
  r = run_round(ledger, criu().open2(kTask).add(kPresent, 0, page('a')).close(), true);
  ASSERT_FALSE(r.answers_to_criu.empty());
  EXPECT_EQ(r.answers_to_criu[0], std::string(1, '\1'));
}

// CRIU is answered without waiting for the page server, which opens its
// parent images meanwhile: CRIU's pages are on their way before the page
// server has answered.
TEST_P(PageDedupTest, CriuIsAnsweredWithoutWaitingForThePageServer) {
  run_round(ledger, criu().open2(kTask).add(kPresent, 0, page('a')).close(), false);
  auto r = run_round(ledger, criu().open2(kTask).add(kPresent, 0, page('b')).close(), true, -1, 0,
                     true, nullptr, false, [](FakePageServer& s) { s.slow_open = true; });
  EXPECT_TRUE(r.stream_went_on_before_open_answer);
  EXPECT_TRUE(r.closed);
  EXPECT_EQ(r.at_destination, std::vector<Record>{present(0, page('b'))});
}

// CRIU's close is answered before the page server's answer comes (that
// one is read after, and decides the round).
TEST_P(PageDedupTest, CriusCloseIsAnsweredBeforeThePageServers) {
  std::atomic<bool> criu_answered{false};
  bool server_saw_answer_first = false;
  auto r = run_round(ledger, criu().open2(kTask).add(kPresent, 0, page('a')).close(), false, -1, 0,
                     true, nullptr, false, [&](FakePageServer& s) {
                       s.before_close_answer = [&] {
                         for (int i = 0; i < 200 && !criu_answered; i++)
                           std::this_thread::sleep_for(std::chrono::milliseconds(10));
                         server_saw_answer_first = criu_answered;
                       };
                     }, [&] { criu_answered = true; });
  EXPECT_TRUE(server_saw_answer_first);
  EXPECT_TRUE(r.closed);
  ASSERT_EQ(r.answers_to_criu.size(), 2u);
  EXPECT_EQ(r.answers_to_criu[1], std::string(4, '\0'));
  EXPECT_EQ(ledger.known_pages(), 1u);
}

// The final dump of a container with verbs objects (ParentPages::Check):
// CRIU calls all four pages unchanged (their soft-dirty bits were cleared
// by the pre-dump), but the NIC wrote two of them since.
TEST_P(PageDedupTest, CheckedParentPagesThatChangedAreSentWithData) {
  run_round(ledger, criu().open2(kTask).add(kPresent, 0, page('a') + page('b') + page('c') + page('d')).close(),
            false);
  FakeTaskMemory memory;
  for (int i = 0; i < 4; i++) memory.pages[7][kBase + i * kPage] = page("aBcD"[i]);
  auto r = run_round(ledger, criu().open2(kTask).add(kParent, 0, "", kTask, 4).close(), true, -1, 0,
                     true, &memory);
  EXPECT_EQ(r.at_destination, (std::vector<Record>{in_parent(0, 1), present(1, page('B')),
                                                   in_parent(2, 1), present(3, page('D'))}));
  EXPECT_EQ(r.stats.parent_pages_checked, 4u);
  EXPECT_EQ(r.stats.parent_pages_changed, 2u);
  EXPECT_EQ(r.stats.pages_in, 0u);  // none came from CRIU with data
  // The ledger holds what the destination has now: the same content
  // dumped again goes as "in parent".
  r = run_round(ledger, criu().open2(kTask).add(kPresent, 0, page('a') + page('B') + page('c') + page('D')).close(),
                true);
  EXPECT_EQ(r.at_destination, std::vector<Record>{in_parent(0, 4)});
}

// With the MRs' write logs (written_task_memory.hpp): of the pages CRIU
// calls unchanged, only those the device wrote are read; the others stay
// in the parent as CRIU said, even where their content changed (the CPU's
// writes would have set the soft-dirty bit).
TEST_P(PageDedupTest, WithTheWriteLogsOnlyThePagesTheDeviceWroteAreChecked) {
  run_round(ledger, criu().open2(kTask).add(kPresent, 0, page('a') + page('b') + page('c') + page('d')).close(),
            false);
  FakeTaskMemory memory;
  for (int i = 0; i < 4; i++) memory.pages[7][kBase + i * kPage] = page("aBCD"[i]);
  crx::migrate::WrittenTaskMemory written(memory, {{7, {{kBase + kPage, kBase + 2 * kPage},
                                                        {kBase + 3 * kPage, kBase + 4 * kPage}}}});
  auto r = run_round(ledger, criu().open2(kTask).add(kParent, 0, "", kTask, 4).close(), true, -1, 0,
                     true, &written);
  EXPECT_EQ(r.at_destination, (std::vector<Record>{in_parent(0, 1), present(1, page('B')),
                                                   in_parent(2, 1), present(3, page('D'))}));
  EXPECT_EQ(r.stats.parent_pages_checked, 2u);
  EXPECT_EQ(r.stats.parent_pages_changed, 2u);
}

// Without the check, CRIU's word stands and nothing is read.
TEST_P(PageDedupTest, UncheckedParentPagesPassAsCriuSentThem) {
  run_round(ledger, criu().open2(kTask).add(kPresent, 0, page('a')).close(), false);
  auto r = run_round(ledger, criu().open2(kTask).add(kParent, 0, "", kTask, 1).close(), true);
  EXPECT_EQ(r.at_destination, std::vector<Record>{in_parent(0, 1)});
  EXPECT_EQ(r.stats.parent_pages_checked, 0u);
}

// A page the task cannot read (no memory there, a guard page) is nothing
// a device has pinned: it stays in the parent, as CRIU said.
TEST_P(PageDedupTest, AnUnreadableParentPageStaysInTheParent) {
  run_round(ledger, criu().open2(kTask).add(kPresent, 0, page('a') + page('b') + page('c')).close(), false);
  FakeTaskMemory memory;
  memory.pages[7][kBase] = page('a');
  memory.pages[7][kBase + 2 * kPage] = page('C');
  auto r = run_round(ledger, criu().open2(kTask).add(kParent, 0, "", kTask, 3).close(), true, -1, 0,
                     true, &memory);
  EXPECT_EQ(r.at_destination, (std::vector<Record>{in_parent(0, 2), present(2, page('C'))}));
  EXPECT_EQ(r.stats.parent_pages_checked, 2u);
  EXPECT_EQ(r.stats.parent_pages_changed, 1u);
}

// A parent page the destination never got from this migration (the ledger
// does not know it) is sent: "in parent" is only ever crx's own claim.
TEST_P(PageDedupTest, ACheckedPageTheLedgerDoesNotKnowIsSent) {
  run_round(ledger, criu().open2(kTask).add(kPresent, 0, page('a')).close(), false);
  FakeTaskMemory memory;
  memory.pages[7][kBase] = page('a');
  memory.pages[7][kBase + kPage] = page('b');
  auto r = run_round(ledger, criu().open2(kTask).add(kParent, 0, "", kTask, 2).close(), true, -1, 0,
                     true, &memory);
  EXPECT_EQ(r.at_destination, (std::vector<Record>{in_parent(0, 1), present(1, page('b'))}));
}

// CRIU's lazy mark on a parent record stays on the pages sent with data.
TEST_P(PageDedupTest, ACheckedLazyParentRecordKeepsItsMark) {
  run_round(ledger, criu().open2(kTask).add(kPresent | kLazy, 0, page('a')).close(), false);
  FakeTaskMemory memory;
  memory.pages[7][kBase] = page('A');
  auto r = run_round(ledger, criu().open2(kTask).add(kParent | kLazy, 0, "", kTask, 1).close(), true,
                     -1, 0, true, &memory);
  EXPECT_EQ(r.at_destination, (std::vector<Record>{{kPresent | kLazy, kBase, 1, kTask, page('A')}}));
}

// A task the container does not have fails the round, with its cause.
TEST_P(PageDedupTest, ACheckOfATaskTheContainerDoesNotHaveFailsTheRound) {
  run_round(ledger, criu().open2(kTask).add(kPresent, 0, page('a')).close(), false);
  FakeTaskMemory memory;
  memory.pages[8][kBase] = page('a');
  try {
    run_round(ledger, criu().open2(kTask).add(kParent, 0, "", kTask, 1).close(), true, -1, 0, true,
              &memory);
    FAIL() << "the round passed";
  } catch (const crx::Error& e) {
    EXPECT_EQ(e.cause(), crx::Cause::NotFound) << e.what();
  }
  EXPECT_EQ(ledger.known_pages(), 1u);  // round 1's, untouched
}

TEST_P(PageDedupTest, SharedMemoryPassesThrough) {
  auto first = criu().open2(kTask).add(kPresent, 0, page('a')).open2(kShmem).add(kPresent, 0, page('s'), kShmem);
  run_round(ledger, first.close(), false);
  auto r = run_round(ledger,
                     criu()
                         .open2(kTask)
                         .add(kPresent, 0, page('a'))
                         .open2(kShmem)
                         .add(kPresent, 0, page('s'), kShmem)
                         .parent_query(kTask)
                         .close(),
                     true);
  EXPECT_EQ(r.at_destination, (std::vector<Record>{in_parent(0, 1), present(0, page('s'), kShmem)}));
  EXPECT_EQ(r.stats.pages_unchanged, 1u);
}

TEST_P(PageDedupTest, LazyMarkedPagesOfAPlainDumpAreFilteredAndKeepTheirFlags) {
  // CRIU 3.17 marks anonymous private memory PE_LAZY | PE_PRESENT in every
  // dump (criu/mem.c sets PPB_LAZY whether or not --lazy-pages is on).
  const uint32_t lazy = kPresent | kLazy;
  run_round(ledger, criu().open2(kTask).add(lazy, 0, page('a') + page('b')).close(), false);
  auto r = run_round(ledger, criu().open2(kTask).add(lazy, 0, page('a') + page('B')).close(), true);
  EXPECT_EQ(r.at_destination,
            (std::vector<Record>{in_parent(0, 1), {lazy, kBase + kPage, 1, kTask, page('B')}}));
}

TEST_P(PageDedupTest, OtherFlagsPassThrough) {
  // Not a combination CRIU sends today: whatever it may mean, untouched.
  const uint32_t odd = kPresent | kParent;
  run_round(ledger, criu().open2(kTask).add(kPresent, 0, page('a')).close(), false);
  auto r = run_round(ledger, criu().open2(kTask).add(odd, 0, page('a')).close(), true);
  EXPECT_EQ(r.at_destination, (std::vector<Record>{{odd, kBase, 1, kTask, page('a')}}));
}

TEST_P(PageDedupTest, ChangedRunsAreSplitIntoBoundedRecords) {
  std::string old_data, new_data;
  for (int i = 0; i < 600; i++) {
    old_data += page(static_cast<char>('a' + i % 20));
    new_data += page(static_cast<char>('A' + i % 20));
  }
  run_round(ledger, criu().open2(kTask).add(kPresent, 0, old_data).close(), false);
  auto r = run_round(ledger, criu().open2(kTask).add(kPresent, 0, new_data).close(), true);
  ASSERT_EQ(r.at_destination.size(), 3u);  // 256 + 256 + 88 pages
  EXPECT_EQ(r.at_destination[0], present(0, new_data.substr(0, 256 * kPage)));
  EXPECT_EQ(r.at_destination[1], present(256, new_data.substr(256 * kPage, 256 * kPage)));
  EXPECT_EQ(r.at_destination[2], present(512, new_data.substr(512 * kPage)));
}

TEST_P(PageDedupTest, ARoundCriuDidNotCloseTeachesNothing) {
  // CRIU dies after its pages, before CLOSE: the destination's round is
  // incomplete, so the next round must not lean on it.
  auto r = run_round(ledger, criu().open2(kTask).add(kPresent, 0, page('a')), false);
  EXPECT_FALSE(r.closed);
  EXPECT_EQ(ledger.known_pages(), 0u);
  r = run_round(ledger, criu().open2(kTask).add(kPresent, 0, page('a')).close(), false);
  EXPECT_EQ(r.at_destination, std::vector<Record>{present(0, page('a'))});
  EXPECT_EQ(r.answers_to_criu[0], std::string(1, '\0'));
}

TEST_P(PageDedupTest, APlainCloseEndsTheRoundToo) {
  run_round(ledger, criu().open2(kTask).add(kPresent, 0, page('a')).close(false), false);
  auto r = run_round(ledger, criu().open2(kTask).add(kPresent, 0, page('a')).close(false), true);
  EXPECT_EQ(r.at_destination, std::vector<Record>{in_parent(0, 1)});
}

TEST_P(PageDedupTest, ARoundThePageServerFailedTeachesNothing) {
  // The page server answers the close with an error: its round is not
  // whole. CRIU was told it was (before the answer came), so the filter
  // fails the round itself.
  try {
    run_round(ledger, criu().open2(kTask).add(kPresent, 0, page('a')).close(), false, -1, -7);
    ADD_FAILURE() << "a round the page server failed passed";
  } catch (const crx::Error& e) {
    EXPECT_EQ(e.cause(), crx::Cause::Peer);
    EXPECT_NE(std::string(e.what()).find("with status -7"), std::string::npos) << e.what();
  }
  EXPECT_EQ(ledger.known_pages(), 0u);
  auto r = run_round(ledger, criu().open2(kTask).add(kPresent, 0, page('a')).close(), false);
  EXPECT_EQ(r.at_destination, std::vector<Record>{present(0, page('a'))});
  EXPECT_EQ(r.answers_to_criu[0], std::string(1, '\0'));
}

TEST_P(PageDedupTest, ADestinationThatGoesAwayFailsTheRound) {
  std::string data;
  for (int i = 0; i < 600; i++) data += page('z');
  // The page server takes the first record and hangs up: the filter fails,
  // CRIU's end is closed (its dump fails), and the round teaches nothing.
  EXPECT_THROW(
      {
        try {
          run_round(ledger, criu().open2(kTask).add(kPresent, 0, page('a')).add(kPresent, 1, data).close(),
                    false, 1);
        } catch (const crx::Error& e) {
          EXPECT_EQ(e.cause(), crx::Cause::IO);  // EPIPE or ECONNRESET, kept
          EXPECT_TRUE(e.sys_errno() == EPIPE || e.sys_errno() == ECONNRESET) << e.sys_errno();
          EXPECT_NE(std::string(e.what()).find("page filter:"), std::string::npos) << e.what();
          throw;
        }
      },
      crx::Error);
  EXPECT_EQ(ledger.known_pages(), 0u);
}

// What the caller asks when CRIU's call failed: the filter failed first,
// and why (CRIU only sees its page channel closed).
TEST(PageDedupRelayFailure, IsTheFiltersOwnCauseOnceItFailed) {
  int net[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, net), 0);
  UniqueFd destination(net[1]);
  PageLedger ledger;
  PageDedupRelay relay(ledger, UniqueFd(net[0]), PageHeaderLayout::Criu3);
  EXPECT_FALSE(relay.failure()) << "nothing failed yet";
  destination.reset();  // the page server gone
  CriuWrites w;
  w.layout = PageHeaderLayout::Criu3;
  w.open2(kTask);
  write_all(relay.criu_end(), w.bytes);
  char c;
  EXPECT_LE(::read(relay.criu_end(), &c, 1), 0) << "the filter closes CRIU's end when it fails";
  std::optional<crx::Error> failed = relay.failure();
  ASSERT_TRUE(failed);
  EXPECT_EQ(failed->sys_errno(), EPIPE) << failed->what();
  EXPECT_EQ(failed->cause(), crx::Cause::IO);
  EXPECT_NE(std::string(failed->what()).find("page filter:"), std::string::npos) << failed->what();
}

// Frames (zero_runs.hpp): the page server gets exactly what CRIU sent,
// pages of zeros among them, while the wire carries those as a count.
TEST_P(PageDedupTest, ZeroPagesCrossAsTheirCountAndArriveAsCriuSentThem) {
  const std::string zero = page('\0');
  const std::string data = page('a') + zero + zero + page('b') + zero;
  PageLedger plain_ledger;
  auto plain = run_round(plain_ledger, criu().open2(kTask).add(kPresent, 0, data).close(), false);
  auto framed = run_round(ledger, criu().open2(kTask).add(kPresent, 0, data).close(), false, -1, 0,
                          true, nullptr, true);
  EXPECT_EQ(framed.decoder_error, "");
  EXPECT_TRUE(framed.closed);
  EXPECT_EQ(framed.at_destination, plain.at_destination);
  EXPECT_EQ(framed.at_destination, std::vector<Record>{present(0, data)});
  EXPECT_EQ(framed.stats.zero_pages, 3u);
  EXPECT_EQ(framed.zero_bytes_decoded, 3 * kPage);
  EXPECT_EQ(plain.stats.zero_pages, 0u);
  // Two pages of data and a few frame headers instead of five pages.
  EXPECT_LT(framed.stats.bytes_out, plain.stats.bytes_out - 2 * kPage);
  EXPECT_EQ(framed.answers_to_criu, plain.answers_to_criu);
}

// The ledger knows a zero page like any other: unchanged in the next round
// it goes "in parent", and it travels framed in a changed run too.
TEST_P(PageDedupTest, FramedRoundsStillLeaveOutWhatTheDestinationHolds) {
  const std::string zero = page('\0');
  run_round(ledger, criu().open2(kTask).add(kPresent, 0, zero + page('a') + zero).close(), false,
            -1, 0, true, nullptr, true);
  auto r = run_round(ledger, criu().open2(kTask).add(kPresent, 0, zero + zero + zero + zero).close(),
                     true, -1, 0, true, nullptr, true);
  EXPECT_EQ(r.decoder_error, "");
  EXPECT_EQ(r.at_destination,
            (std::vector<Record>{in_parent(0, 1), present(1, zero), in_parent(2, 1), present(3, zero)}));
  EXPECT_EQ(r.stats.zero_pages, 2u);
  EXPECT_EQ(r.stats.pages_unchanged, 2u);
}

// Compressed frames (zero_runs.hpp, "Compressed"): pages that are mostly
// zero bytes cross as a fraction of their size, and the page server still
// gets exactly what CRIU sent, zero pages and answers included.
TEST_P(PageDedupTest, SparsePagesCrossCompressedAndArriveAsCriuSentThem) {
  std::string data;
  for (int i = 0; i < 64; i++) {
    std::string p = page('\0');
    p[(i * 67) % kPage] = static_cast<char>(i + 1);  // a rank's receive slot: a few bytes
    data += i % 16 == 5 ? page('\0') : p;
  }
  PageLedger framed_ledger;
  auto framed = run_round(framed_ledger, criu().open2(kTask).add(kPresent, 0, data).close(), false,
                          -1, 0, true, nullptr, true);
  auto compressed = run_round(ledger, criu().open2(kTask).add(kPresent, 0, data).close(), false,
                              -1, 0, true, nullptr, true, {}, {}, true);
  EXPECT_EQ(compressed.decoder_error, "");
  EXPECT_TRUE(compressed.closed);
  EXPECT_EQ(compressed.at_destination, framed.at_destination);
  EXPECT_EQ(compressed.at_destination, std::vector<Record>{present(0, data)});
  EXPECT_EQ(compressed.stats.zero_pages, 4u);
  EXPECT_EQ(compressed.zero_bytes_decoded, 4 * kPage);
  EXPECT_GT(compressed.stats.compressed_in, 60 * kPage);
  EXPECT_LT(compressed.stats.bytes_out, framed.stats.bytes_out / 8);
  EXPECT_EQ(compressed.answers_to_criu, framed.answers_to_criu);
  EXPECT_EQ(framed.stats.compressed_in, 0u);
  EXPECT_GT(compressed.stats.cpu_seconds, 0.0) << "the relay thread's CPU, for the report";
}

INSTANTIATE_TEST_SUITE_P(
    BothHeaderLayouts, PageDedupTest,
    ::testing::Values(Channel{PageHeaderLayout::Criu3, PageDedupRelay::Splice::ByReference},
                      Channel{PageHeaderLayout::Criu42, PageDedupRelay::Splice::ByReference},
                      Channel{PageHeaderLayout::Criu3, PageDedupRelay::Splice::Copying},
                      Channel{PageHeaderLayout::Criu42, PageDedupRelay::Splice::Copying}),
    [](const auto& info) {
      return std::string(info.param.layout == PageHeaderLayout::Criu3 ? "criu3" : "criu42") +
             (info.param.splice == PageDedupRelay::Splice::Copying ? "_seqpacket" : "_stream");
    });

// A channel's first 64 KiB leave in writes of 8 KiB at most (kernel TLS
// makes a record of each): a record larger than a new connection's first
// flight stalls on the receiver's delayed ACK. After that, large writes.
TEST(PageDedupRelayWrites, AChannelsFirstBytesGoInSmallWritesTheRestInOne) {
  int net[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, net), 0);
  UniqueFd destination(net[1]);
  CriuWrites w;
  std::string data;
  for (int i = 0; i < 40; ++i) data += page(static_cast<char>('a' + i % 26));
  w.add(kPresent, 0, data).close();
  std::vector<size_t> writes;
  std::thread server([&] {
    std::vector<char> buf(1 << 20);
    for (size_t got = 0; got < w.bytes.size();) {
      ssize_t n = ::recv(destination.get(), buf.data(), buf.size(), 0);
      if (n <= 0) return;
      writes.push_back(static_cast<size_t>(n));
      got += static_cast<size_t>(n);
    }
    int32_t status = 0;
    (void)!::send(destination.get(), &status, sizeof status, MSG_NOSIGNAL);
  });
  PageLedger ledger;
  {
    PageDedupRelay relay(ledger, UniqueFd(net[0]), w.layout);
    write_all(relay.criu_end(), w.bytes);
    std::string answer(4, '\0');
    EXPECT_TRUE(read_all(relay.criu_end(), answer.data(), 4));
    relay.finish();
  }
  server.join();
  ASSERT_GE(writes.size(), 2u);
  size_t sent = 0, i = 0;
  for (; i < writes.size() && sent < 64u * 1024; ++i) {
    EXPECT_LE(writes[i], 8u * 1024) << "write " << i;
    sent += writes[i];
  }
  EXPECT_EQ(sent, 64u * 1024);
  // Then in large writes (more than one where the relay caught up with
  // CRIU and flushed while it waited for more).
  ASSERT_LT(i, writes.size());
  for (; i < writes.size(); ++i) sent += writes[i];
  EXPECT_EQ(sent, w.bytes.size());
  EXPECT_GT(writes.back(), 8u * 1024);
}

// Records go out when CRIU pauses, not only at its CLOSE: the page server
// works on them while CRIU goes on with its other images.
TEST(PageDedupRelayWrites, WhatCriuSentGoesOutWhenItPauses) {
  int net[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, net), 0);
  UniqueFd destination(net[1]);
  CriuWrites before_pause, after_pause;
  before_pause.open2(kTask).add(kPresent, 0, page('a'));
  after_pause.close();
  const size_t hs = header_size(before_pause.layout);
  const size_t record_bytes = before_pause.bytes.size();  // OPEN2, one record with its page
  std::atomic<bool> record_arrived{false};
  std::thread server([&] {
    std::string got;
    std::vector<char> buf(1 << 16);
    bool answered = false;
    while (got.size() < record_bytes + hs) {
      ssize_t n = ::recv(destination.get(), buf.data(), buf.size(), 0);
      if (n <= 0) return;
      got.append(buf.data(), static_cast<size_t>(n));
      if (!answered && got.size() >= hs) {
        (void)!::send(destination.get(), "\0", 1, MSG_NOSIGNAL);  // OPEN2: no parent
        answered = true;
      }
      if (got.size() >= record_bytes) record_arrived = true;
    }
    int32_t status = 0;
    (void)!::send(destination.get(), &status, sizeof status, MSG_NOSIGNAL);
  });
  PageLedger ledger;
  {
    PageDedupRelay relay(ledger, UniqueFd(net[0]), before_pause.layout);
    write_all(relay.criu_end(), before_pause.bytes.substr(0, hs));
    char open_answer;
    ASSERT_TRUE(read_all(relay.criu_end(), &open_answer, 1));
    write_all(relay.criu_end(), before_pause.bytes.substr(hs));
    // CRIU pauses here (before its CLOSE) for up to 2 s.
    for (int i = 0; i < 200 && !record_arrived; ++i) ::usleep(10000);
    EXPECT_TRUE(record_arrived) << "the record waited for CRIU's close";
    write_all(relay.criu_end(), after_pause.bytes);
    std::string answer(4, '\0');
    EXPECT_TRUE(read_all(relay.criu_end(), answer.data(), 4));
    relay.finish();
  }
  server.join();
}

TEST(PageHeaderLayout, FollowsCriusVersion) {
  EXPECT_EQ(crx::migrate::page_header_layout(3, 17), PageHeaderLayout::Criu3);
  EXPECT_EQ(crx::migrate::page_header_layout(4, 1), PageHeaderLayout::Criu3);
  EXPECT_EQ(crx::migrate::page_header_layout(4, 2), PageHeaderLayout::Criu42);
  EXPECT_EQ(crx::migrate::page_header_layout(5, 0), PageHeaderLayout::Criu42);
}

TEST(PageLedger, EqualContentIsUnchangedOnlyAgainstTheParentRound) {
  PageLedger l;
  auto a = crx::migrate::hash_page(page('a').data(), kPage);
  auto b = crx::migrate::hash_page(page('b').data(), kPage);
  EXPECT_FALSE(a == b);
  EXPECT_FALSE(l.unchanged(kTask, kBase, a));  // nothing known yet
  EXPECT_FALSE(l.unchanged(kTask, kBase, a));  // not until the round ends
  l.end_round();
  EXPECT_TRUE(l.unchanged(kTask, kBase, a));
  EXPECT_FALSE(l.unchanged(kTask + 256, kBase, a));  // another task's page
  l.abandon_round();
  l.end_round();  // an empty round: everything forgotten
  EXPECT_FALSE(l.unchanged(kTask, kBase, a));
}

// The destination's page server has a parent image for a pagemap exactly
// where the round before (its parent) opened it.
TEST(PageLedger, AnImageHasAParentWhereTheLastCompleteRoundOpenedIt) {
  PageLedger l;
  EXPECT_FALSE(l.opened(kTask));  // the first round has no parent
  EXPECT_FALSE(l.opened(kShmem));
  l.end_round();
  EXPECT_TRUE(l.opened(kTask));
  EXPECT_FALSE(l.opened(kTask + 256));  // a task new in this round
  l.abandon_round();                    // what the failed round opened counts for nothing
  EXPECT_TRUE(l.opened(kShmem));
  l.end_round();
  EXPECT_TRUE(l.opened(kShmem));
  EXPECT_FALSE(l.opened(kTask));  // not opened in the last complete round
}

}  // namespace
