// A migration's control connection after authentication, as the receiver
// runs it: the first frame must be a Manifest (parse_manifest), then the
// frames of the rounds: image data, closes and symlinks into an images dir
// (ImageSink, the real one, on a scratch dir), RoundStart and RoundDone
// bodies. The sender's side of the same conversation (Accept, RoundAck,
// RestoreOk, CommitAck bodies from a hostile receiver) is parsed too when
// such frames come. Input byte 0 picks raw bytes or well-formed frames
// (fuzz_common.hpp). The rootfs stream (RootfsData) is left out: it is
// handed to GNU tar.
#include <sys/stat.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "common/fs.hpp"
#include "fuzz_common.hpp"
#include "migrate/image_stream.hpp"
#include "migrate/protocol.hpp"

namespace {

namespace m = crx::migrate;

std::string scratch_root() {
  const char* env = std::getenv("CRX_FUZZ_SCRATCH");
  std::string base = env ? env : (::access("/dev/shm", W_OK) == 0 ? "/dev/shm" : "/tmp");
  std::string tmpl = base + "/crx-fuzz-session-XXXXXX";
  if (!::mkdtemp(tmpl.data())) std::abort();
  return tmpl;
}

void serve(m::FrameConn& conn, const std::string& dir) {
  m::Manifest manifest = m::parse_manifest(conn.expect(m::FrameType::Manifest).payload);
  (void)m::to_json(manifest);
  m::ImageSink sink(dir, 1 << 20);
  for (;;) {
    m::Frame f = conn.receive();
    if (sink.handle(f)) continue;
    switch (f.type) {
      case m::FrameType::RoundStart: (void)m::parse_round_start(f.payload); break;
      case m::FrameType::RoundDone: (void)m::parse_round_done(f.payload); break;
      case m::FrameType::Accept: (void)m::parse_acceptance(f.payload); break;
      case m::FrameType::RoundAck: (void)m::parse_round_ack(f.payload); break;
      case m::FrameType::RestoreOk: (void)m::parse_restore_done(f.payload); break;
      case m::FrameType::CommitAck: (void)m::parse_commit_ack(f.payload); break;
      case m::FrameType::LateState: (void)m::parse_late_state(f.payload); break;
      default: break;
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string root = scratch_root();
  if (size == 0 || size > 65536) return 0;
  std::string stream = crx::fuzz::frame_stream(data, size);
  crx::fuzz::SocketFeed feed;
  if (!crx::fuzz::feed_socket(stream, &feed)) return 0;
  std::string dir = root + "/images";
  ::mkdir(dir.c_str(), 0700);
  m::FrameConn conn(std::move(feed.reader), "fuzz sender");
  try {
    serve(conn, dir);
  } catch (const crx::Error&) {
  }
  crx::remove_tree(dir);
  return 0;
}
