// MessageReader (migrate/message_reader.hpp) over real sockets, and why
// CRIU's read-mode pre-dump needs the copying page channel: a page spliced
// into it and then overwritten in the writer's buffer arrives as it was
// spliced; through the stream channel it arrives overwritten.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cstring>
#include <string>
#include <vector>

#include "common/error.hpp"
#include "common/unique_fd.hpp"
#include "migrate/message_reader.hpp"
#include "migrate/page_dedup.hpp"

namespace {

using crx::Cause;
using crx::Error;
using crx::UniqueFd;
using crx::migrate::MessageReader;
using crx::migrate::PageDedupRelay;

constexpr size_t kPage = 4096;

struct Pair {
  UniqueFd reader, writer;
};

Pair pair_of(int type) {
  int sv[2];
  EXPECT_EQ(::socketpair(AF_UNIX, type | SOCK_CLOEXEC, 0, sv), 0);
  return {UniqueFd(sv[0]), UniqueFd(sv[1])};
}

void send_message(int fd, const std::string& m) {
  ASSERT_EQ(::send(fd, m.data(), m.size(), MSG_NOSIGNAL), static_cast<ssize_t>(m.size()));
}

std::string read_n(MessageReader& r, size_t n) {
  std::string s(n, '\0');
  EXPECT_TRUE(r.read_exact(s.data(), n, "test"));
  return s;
}

TEST(MigrateMessageReader, HandsOutMessagesAsTheBytesAskedForWhateverTheirBoundaries) {
  Pair p = pair_of(SOCK_SEQPACKET);
  // A 24-byte header, two pages in three messages, a header cut in two.
  const std::string header(24, 'h'), page1(kPage, '1'), page2(kPage, '2');
  send_message(p.writer.get(), header + page1.substr(0, 100));
  send_message(p.writer.get(), page1.substr(100) + page2.substr(0, 50));
  send_message(p.writer.get(), page2.substr(50));
  send_message(p.writer.get(), "abc");
  send_message(p.writer.get(), "defgh");
  p.writer.reset();
  MessageReader r(p.reader.get(), 8 * 1024);
  EXPECT_EQ(read_n(r, 24), header);
  EXPECT_TRUE(r.readable_now());
  EXPECT_EQ(read_n(r, 2 * kPage), page1 + page2);
  EXPECT_EQ(read_n(r, 8), "abcdefgh");
  char c;
  EXPECT_FALSE(r.read_exact(&c, 1, "test", true)) << "the end between records is the end";
}

TEST(MigrateMessageReader, ReadsLongerThanAMessageGoStraightIntoTheCallersBuffer) {
  Pair p = pair_of(SOCK_SEQPACKET);
  std::string pages;
  for (int i = 0; i < 20; i++) pages += std::string(kPage, static_cast<char>('a' + i));
  for (size_t off = 0; off < pages.size(); off += kPage)
    send_message(p.writer.get(), pages.substr(off, kPage));
  MessageReader r(p.reader.get(), kPage);
  EXPECT_EQ(read_n(r, pages.size()), pages);
}

TEST(MigrateMessageReader, AMessageLongerThanItsLimitIsAnErrorNotACut) {
  Pair p = pair_of(SOCK_SEQPACKET);
  send_message(p.writer.get(), std::string(2 * kPage, 'x'));
  MessageReader r(p.reader.get(), kPage);
  char h[24];
  try {
    r.read_exact(h, sizeof h, "reading CRIU's page stream");
    FAIL() << "a message longer than the limit must not be cut";
  } catch (const Error& e) {
    EXPECT_EQ(e.cause(), Cause::Invalid);
    EXPECT_NE(std::string(e.what()).find("longer than 4096 bytes"), std::string::npos) << e.what();
  }
}

TEST(MigrateMessageReader, AnEndInsideARecordIsAnIoError) {
  Pair p = pair_of(SOCK_SEQPACKET);
  send_message(p.writer.get(), std::string(10, 'x'));
  p.writer.reset();
  MessageReader r(p.reader.get());
  char h[24];
  try {
    r.read_exact(h, sizeof h, "reading CRIU's page stream", true);
    FAIL() << "ten bytes of a 24-byte header must not pass";
  } catch (const Error& e) {
    EXPECT_EQ(e.cause(), Cause::IO);
  }
}

// CRIU's read-mode pre-dump (criu/page-xfer.c, page_xfer_predump_pages):
// pages read into a buffer, vmspliced into a pipe, the pipe spliced into
// the page channel, then the next pages read into the same buffer. What
// the reader gets of the first page.
std::string spliced_then_overwritten(int writer, int reader) {
  void* mem = ::mmap(nullptr, kPage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  EXPECT_NE(mem, MAP_FAILED);
  auto* buf = static_cast<char*>(mem);
  std::memset(buf, 'A', kPage);
  int pipefd[2];
  EXPECT_EQ(::pipe2(pipefd, O_CLOEXEC), 0);
  UniqueFd in(pipefd[1]), out(pipefd[0]);
  iovec iov{buf, kPage};
  EXPECT_EQ(::vmsplice(in.get(), &iov, 1, SPLICE_F_GIFT), static_cast<ssize_t>(kPage));
  EXPECT_EQ(::splice(out.get(), nullptr, writer, nullptr, kPage, SPLICE_F_MOVE),
            static_cast<ssize_t>(kPage));
  std::memset(buf, 'B', kPage);  // the next batch, read before the first was taken
  MessageReader r(reader);
  std::string got(kPage, '\0');
  EXPECT_TRUE(r.read_exact(got.data(), kPage, "test"));
  ::munmap(mem, kPage);
  return got;
}

TEST(MigrateMessageReader, ACopyingPageChannelKeepsASplicedPageAsItWasSpliced) {
  PageDedupRelay::Ends ends = PageDedupRelay::Ends::make(PageDedupRelay::Splice::Copying);
  const std::string got = spliced_then_overwritten(ends.criu.get(), ends.local.get());
  EXPECT_EQ(got, std::string(kPage, 'A')) << "the page channel carried bytes written after the splice";
}

TEST(MigrateMessageReader, AStreamPageChannelCarriesWhatWasWrittenAfterTheSplice) {
  // Why read mode needs the copying channel: the kernel (6.1's sendpage,
  // later kernels' MSG_SPLICE_PAGES) queues the spliced page itself.
  PageDedupRelay::Ends ends = PageDedupRelay::Ends::make(PageDedupRelay::Splice::ByReference);
  const std::string got = spliced_then_overwritten(ends.criu.get(), ends.local.get());
  EXPECT_EQ(got, std::string(kPage, 'B'));
}

TEST(MigrateMessageReader, ReadsAStreamSocketToo) {
  Pair p = pair_of(SOCK_STREAM);
  const std::string data = std::string(3 * kPage, 'x') + "tail";
  send_message(p.writer.get(), data);
  p.writer.reset();
  MessageReader r(p.reader.get(), kPage);
  EXPECT_EQ(read_n(r, 10), data.substr(0, 10));
  EXPECT_EQ(read_n(r, data.size() - 10), data.substr(10));
  char c;
  EXPECT_FALSE(r.read_exact(&c, 1, "test", true));
}

}  // namespace
