#include "migrate/sender.hpp"

#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>

#include <optional>

#include "common/error.hpp"
#include "common/fs.hpp"
#include "common/log.hpp"
#include "migrate/cancel_watch.hpp"
#include "migrate/image_stream.hpp"
#include "migrate/kernel_tls.hpp"
#include "migrate/precopy.hpp"
#include "migrate/rootfs_stream.hpp"
#include "migrate/tls_session.hpp"

namespace crx::migrate {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) {
  return std::chrono::duration<double>(Clock::now() - t).count();
}

// CRIU writes to the page channel with plain blocking writes: a socket
// time-out makes a dead link fail the dump instead of hanging it. Not for
// reading in a lazy round: CRIU's lazy page server waits there for the
// destination's first request, which comes only once the restore is done
// (up to restore_timeout); TCP keepalive (detect_dead_peer) ends that wait
// on a dead link.
void set_socket_timeouts(int fd, std::chrono::milliseconds t, bool receive_too) {
  struct timeval tv{};
  tv.tv_sec = t.count() / 1000;
  tv.tv_usec = (t.count() % 1000) * 1000;
  ::setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  if (receive_too) ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
}

class Sender {
 public:
  Sender(SourceSide& src, const SenderOptions& o)
      : src_(src), o_(o), clock_(rep_, o.progress), session_(random_hex(16)) {
    rep_.role = "sender";
    rep_.id = o.manifest.id;
    rep_.peer = o.to.str();
  }

  MigrationReport run() {
    bool work_dir_made = false;
    try {
      check_cancel();
      mkdir_p(o_.work_dir, 0700);
      work_dir_made = true;
      connect();
      pre_copy();
      final_dump();
      restore_and_commit();
      rep_.outcome = "migrated";
    } catch (const std::exception& e) {
      clock_.end();
      rep_.error = e.what();
      auto* error = dynamic_cast<const Error*>(&e);
      if (filling_ && error && error->cause() == Cause::Peer) {
        // The destination says its copy failed and is gone; the source
        // has every page.
        rep_.outcome = "fill failed";
        rep_.error = "filling the memory of " + o_.manifest.id + " on " + o_.to.host +
                     " failed after it resumed there: " + rep_.error +
                     "; the destination killed its copy. The source stays frozen as it was at "
                     "the freeze: `crx resume " + o_.manifest.id +
                     "` runs it from there (what the destination's copy did since is lost), "
                     "`crx delete -f " + o_.manifest.id + "` drops it";
      } else if (committing_ && !lazy_phase_) {
        rep_.outcome = "in doubt";
        rep_.error += "; the source container stays frozen: check `crx state " + rep_.id +
                      "` on " + o_.to.host + ", then delete or resume it here";
        finish_lazy_quietly();
      } else if (lazy_phase_) {
        rep_.outcome = "lazy phase failed";
        rep_.error = "the lazy phase failed after " + o_.manifest.id + " resumed on " + o_.to.host +
                     ": " + rep_.error +
                     "; the destination kills its copy, which lacks memory that only this host "
                     "had. The source stays frozen as it was at the freeze: `crx resume " +
                     o_.manifest.id + "` runs it from there (what the destination's copy did "
                     "since is lost), `crx delete -f " + o_.manifest.id + "` drops it";
        finish_lazy_quietly();
      } else {
        rollback(e.what());
      }
    }
    clock_.end();
    if (frozen_at_) {
      rep_.downtime_seconds = std::chrono::duration<double>(
                                  (running_again_at_ ? *running_again_at_ : Clock::now()) -
                                  *frozen_at_)
                                  .count();
    }
    if (conn_) rep_.wire_bytes = conn_->bytes_sent() + conn_->bytes_received();
    rep_.total_seconds = clock_.since_start();
    if (work_dir_made) {
      try {
        remove_tree(o_.work_dir);
      } catch (const std::exception&) {
      }
    }
    if (o_.progress) o_.progress("done");
    return rep_;
  }

 private:
  Credentials credentials() const { return {o_.wire, o_.key, o_.cert, o_.cipher}; }

  void check_cancel() {
    if (o_.cancel && o_.cancel->load()) throw Error("interrupted");
  }

  void connect() {
    clock_.begin("connect");
    if (o_.manifest.lazy && (o_.pre_copy.adaptive || o_.pre_copy.max_rounds > 0))
      throw Error("--lazy and --pre-copy exclude each other: post-copy moves the memory after "
                  "the resume, so no round before the freeze is needed",
                  Cause::Invalid);
    // Before anything is frozen: the page channel needs kernel TLS here.
    std::string why;
    if (o_.wire != WireSecurity::Plaintext && !kernel_tls_available(&why)) {
      throw Error("cannot encrypt the page channel: " + why +
                      (o_.wire == WireSecurity::TlsCert
                           ? "; load it (certificates need TLS)"
                           : "; load it, or pass --insecure-plaintext to both crx migrate and crx "
                             "receive"),
                  Cause::Unsupported);
    }
    conn_.emplace(connect_tcp(o_.to, o_.timeout), "receiver " + o_.to.str());
    conn_->set_timeout(o_.timeout);
    detect_dead_peer(conn_->fd(), o_.timeout);
    authenticate_as_client(*conn_, credentials(), "control", session_);
    rep_.security = wire_security_name(o_.wire);
    Manifest m = o_.manifest;
    m.pre_copy_rounds = o_.pre_copy.adaptive ? kAutoMaxRounds : o_.pre_copy.max_rounds;
    m.fill_after_resume = true;  // fill_phase()
    conn_->send(FrameType::Manifest, to_json(m));
    Acceptance a = parse_acceptance(conn_->expect(FrameType::Accept).payload);
    rep_.prepare_seconds = a.prepare_seconds;
    final_round_ahead_ = a.final_round_ahead;
    // Frames only where the receiver decodes them and this side has a page
    // filter to write them (zero_runs.hpp).
    zero_runs_ = src_.zero_runs(a.zero_runs);
    // Compressed only where the cipher makes a byte dear (zero_runs.hpp).
    src_.compress_pages(a.lz4_frames && zero_runs_ && o_.wire != WireSecurity::Plaintext);
    src_.destination_makes_uts_ipc(a.uts_ipc_anew);
    late_state_ = a.late_state;
    src_.destination_takes_late_state(a.late_state);
    src_.destination_has_elf_files(a.elf_files_same);
    src_.destination_cgroup(a.cgroup_path);
    // Negotiated: a receiver that does not say "lazy" (an older crx ignores
    // the manifest's field) would wait for the memory in the final round.
    if (o_.manifest.lazy && !a.lazy)
      throw Error("receiver " + o_.to.str() + " does not take post-copy migrations (--lazy; an "
                  "older crx receive); migrate without --lazy",
                  Cause::Unsupported);
    if (a.need_rootfs) {
      if (!o_.manifest.send_rootfs) {
        throw Error("the destination has no matching bundle at " + a.bundle +
                    "; pass --send-rootfs to send config.json and the rootfs");
      }
      clock_.begin("rootfs");
      rep_.rootfs_bytes = send_bundle(*conn_, o_.rootfs_bundle);
    }
  }

  void pre_copy() {
    PreCopyPlanner planner(o_.pre_copy);
    if (o_.pre_copy.adaptive) rep_.pre_copy_mode = "auto";
    else if (o_.pre_copy.max_rounds > 0) rep_.pre_copy_mode = "fixed";
    while (planner.want_another_round()) {
      check_cancel();
      ++round_;
      clock_.begin("pre-copy " + std::to_string(round_));
      RoundReport r;
      try {
        r = do_round(false);
      } catch (const std::exception&) {
        check_cancel();  // a Ctrl-C that cut the round short says so
        throw;
      }
      planner.record_round(RoundSample{r.page_bytes, r.seconds, since_prev_snapshot_});
      const RoundEstimate& e = planner.estimates().back();
      r.throughput = e.throughput;
      r.bandwidth = e.bandwidth;
      r.dirty_rate = e.dirty_rate;
      r.predicted_final_bytes = e.predicted_final_bytes;
      r.predicted_downtime = e.predicted_downtime;
      rep_.rounds.push_back(r);
    }
    if (planner.rounds_done() > 0) {
      rep_.pre_copy_stop = planner.stop_reason();
      rep_.fixed_downtime_estimate = planner.fixed_downtime();
    }
  }

  void final_dump() {
    check_cancel();
    ++round_;
    // The final round's page channel (the destination's page server
    // started, a TCP connection, its TLS handshake) needs nothing from the
    // frozen container: opened before the freeze, it leaves the window.
    std::optional<OpenRound> ahead;
    if (final_round_ahead_) {
      clock_.begin("open final round");
      ahead = open_round(true);
      // And what the dump can make ready on this side (its CRIU started
      // and waiting); a lazy dump's CRIU is another call.
      if (!o_.manifest.lazy) {
        clock_.begin("prepare dump");
        src_.prepare_dump(round_dir(round_), ahead->start.parent, ahead->page_fd.get());
      }
    }
    clock_.begin("freeze");
    frozen_at_ = Clock::now();
    needs_resume_ = true;  // from here on a failure must thaw the source
    src_.freeze();
    if (ahead) {
      conn_->send(FrameType::Frozen);  // the receiver's downtime starts here
      ahead->t0 = *frozen_at_;         // the round's time is the window's
    }
    clock_.begin("checkpoint+transfer");
    auto last_snapshot = last_snapshot_;
    RoundReport r = ahead ? run_round(std::move(*ahead)) : do_round(true);
    // What actually happened, beside the last round's prediction: the
    // pages dirtied from the last pre-copy snapshot to the freeze.
    if (r.seconds > 0) r.throughput = r.page_bytes / r.seconds;
    if (last_snapshot) {
      double s = std::chrono::duration<double>(*frozen_at_ - *last_snapshot).count();
      if (s > 0) r.dirty_rate = r.page_bytes / s;
    }
    rep_.rounds.push_back(r);
    if (late_state_) {
      // While the destination restores: what the dump left to read, on a
      // vCPU that would idle otherwise.
      LateState late = src_.late_state();
      rep_.rounds.back().net_sysctls_carried += late.net_sysctls.size();
      conn_->send(FrameType::LateState, to_json(late));
    }
  }

  void restore_and_commit() {
    clock_.begin("restore");
    conn_->set_timeout(o_.restore_timeout);
    conn_->expect(FrameType::RestoreOk);
    conn_->set_timeout(o_.timeout);
    check_cancel();  // last point where Ctrl-C rolls back
    committing_ = true;
    clock_.begin("commit");
    conn_->send(FrameType::Commit);
    Frame ack = conn_->expect(FrameType::CommitAck);
    running_again_at_ = Clock::now();
    bool filling = add_destination_notes(ack.payload);
    if (lazy_) lazy_phase();
    else if (filling) fill_phase();
    clock_.begin("destroy source");
    try {
      src_.destroy();
    } catch (const std::exception& e) {
      rep_.error = std::string("migrated, but removing the source copy failed: ") + e.what();
    }
    clock_.end();
  }

  // Post-copy: the container runs on the destination and fetches its
  // memory from the frozen source; the source may go only once every page
  // has arrived. From here on neither side can go back (README.md,
  // "Post-copy").
  void lazy_phase() {
    lazy_phase_ = true;
    clock_.begin("lazy pages");
    conn_->set_timeout(o_.lazy_timeout);
    LazyStats st = parse_lazy_done(conn_->expect(FrameType::LazyDone).payload);
    conn_->set_timeout(o_.timeout);
    // The destination has every page: CRIU's page server ends with its
    // close message; waiting for it is what makes the source's pages free.
    lazy_->wait_pages(o_.timeout);
    lazy_.reset();
    rep_.lazy = st;
    lazy_phase_ = false;
  }

  // Filled after the resume (README.md, "Pages filled after the resume"):
  // the container runs on the destination while the pages it received are
  // copied into it there. The source has all of them and stays frozen
  // until that is done: a failure there leaves it to be resumed.
  void fill_phase() {
    filling_ = true;
    clock_.begin("fill after resume");
    conn_->set_timeout(o_.lazy_timeout);
    rep_.fill = parse_lazy_done(conn_->expect(FrameType::LazyDone).payload);
    conn_->set_timeout(o_.timeout);
    filling_ = false;
  }

  // After a failure past the commit: the destination may still fetch pages
  // (an in-doubt commit) or has failed; either way CRIU's page server ends
  // when the destination lets go of the channel or the link is declared
  // dead, and the source's frozen tasks must stay untouched until then.
  void finish_lazy_quietly() {
    if (!lazy_) return;
    try {
      lazy_->wait_pages(o_.lazy_timeout);
    } catch (const std::exception&) {
    }
    lazy_.reset();
  }

  // A round whose page channel is open: the destination's page server
  // waits on it for CRIU's pages.
  struct OpenRound {
    RoundStart start;
    UniqueFd page_fd;
    Clock::time_point t0;
    std::unique_ptr<ImageStreamer> streamer;  // started: sends what CRIU writes
  };

  RoundReport do_round(bool final) { return run_round(open_round(final)); }

  // Where a round's images go.
  std::string round_dir(int round) const { return o_.work_dir + "/" + std::to_string(round); }

  OpenRound open_round(bool final) {
    auto t0 = Clock::now();
    RoundStart start{round_, final, round_ > 1 ? "../" + std::to_string(round_ - 1) : ""};
    start.ahead = final && final_round_ahead_;
    start.zero_runs = zero_runs_ && !(final && o_.manifest.lazy);  // lazy: CRIU's own channel
    conn_->send(FrameType::RoundStart, to_json(start));
    conn_->expect(FrameType::PageServerReady);

    FrameConn pages(connect_tcp(o_.to, o_.timeout), "page channel " + o_.to.str());
    pages.set_timeout(o_.timeout);
    authenticate_as_client(pages, credentials(), "pages", session_);
    if (pages.tls()) rep_.tls_cipher = tls13_suite_name(pages.tls()->negotiated());
    UniqueFd page_fd = pages.release_fd();  // TLS: now kernel TLS
    if (o_.wire != WireSecurity::Plaintext)
      rep_.security = std::string(wire_security_name(o_.wire)) + "+ktls";
    const bool lazy = final && o_.manifest.lazy;
    set_socket_timeouts(page_fd.get(), o_.timeout, !lazy);
    detect_dead_peer(page_fd.get(), o_.timeout);
    // The streamer's thread is made here, with the round: a final round
    // opened ahead makes it before the freeze, not in the frozen window
    // (4-6 ms of it in a TCG guest). The round has started at the receiver,
    // and this thread receives nothing more before the round runs: from
    // here on the control connection only sends, one frame at a time.
    std::string dir = round_dir(start.round);
    mkdir_p(dir, 0700);
    auto streamer = std::make_unique<ImageStreamer>(*conn_, dir, std::to_string(start.round));
    streamer->start();
    return OpenRound{start, std::move(page_fd), t0, std::move(streamer)};
  }

  RoundReport run_round(OpenRound open) {
    const RoundStart& start = open.start;
    const bool final = start.final;
    const bool lazy = final && o_.manifest.lazy;
    UniqueFd page_fd = std::move(open.page_fd);
    RoundReport r;
    r.round = start.round;
    r.final = final;
    const std::string dir = round_dir(start.round);
    ImageStreamer& streamer = *open.streamer;
    auto c0 = Clock::now();  // CRIU starts: its snapshot of the dirty pages
    since_prev_snapshot_ = last_snapshot_ ? std::chrono::duration<double>(c0 - *last_snapshot_).count() : 0;
    last_snapshot_ = c0;
    if (lazy) {
      // CRIU dumps all but the memory, says so (post-dump), then serves the
      // pages on this channel until the destination has them all.
      lazy_ = src_.lazy_dump(dir, std::move(page_fd));
      lazy_->wait_images(o_.restore_timeout);
      rep_.verbs = VerbsReport::read(dir);
    } else if (final) {
      src_.dump(dir, start.parent, page_fd.get(), ParentPages::Trust);
      rep_.verbs = VerbsReport::read(dir);  // the verbs plugin's crx-verbs-dump.json
    } else {
      // A Ctrl-C ends the round at once (cancel_watch.hpp), not after its
      // pages crossed.
      CancelWatch watch(o_.cancel, page_fd.get());
      src_.pre_dump(dir, start.parent, page_fd.get());
    }
    {
      // A lazy dump's: crx's choices only (SourceSide::lazy_dump).
      RoundStats stats = src_.last_round();
      r.unchanged_pages = stats.dedup.pages_unchanged;
      r.zero_pages = stats.dedup.zero_pages;
      r.compressed_bytes = stats.dedup.compressed_in;
      r.compressed_to = stats.dedup.compressed_out;
      r.filter_cpu_seconds = stats.dedup.cpu_seconds;
      r.parent_pages_checked = stats.dedup.parent_pages_checked;
      r.parent_pages_changed = stats.dedup.parent_pages_changed;
      r.device_written_pages = stats.device_written_pages;
      r.netns_moved_empty = stats.netns_moved_empty;
      r.net_sysctls_carried = stats.net_sysctls_carried;
      r.netns_read_ahead = stats.netns_read_ahead;
      r.net_sysctls_late = stats.net_sysctls_late;
      r.uts_ipc_made_anew = stats.uts_ipc_made_anew;
      r.cgroup_left_to_destination = stats.cgroup_left_to_destination;
      r.build_ids_checked_ahead = stats.build_ids_checked_ahead;
      r.dump_request_ahead = stats.dump_request_ahead;
      r.pre_dump_read = stats.pre_dump_read;
      r.criu = stats.criu;
    }
    double criu_s = seconds_since(c0);
    page_fd.reset();
    r.image_bytes = streamer.finish();
    log::debug("migrate: round " + std::to_string(start.round) + ": " +
               std::to_string(r.image_bytes) + " bytes of images sent");
    conn_->send(FrameType::RoundDone, to_json(RoundDone{r.image_bytes, criu_s}));
    // The final round's DumpDone follows at once, not after the ack: the
    // receiver reads it next either way, and its restore then starts one
    // round trip sooner in the frozen window. A round it finds incomplete
    // still fails there, and the ack's place says so.
    if (final) conn_->send(FrameType::DumpDone);
    r.page_bytes = parse_round_ack(conn_->expect(FrameType::RoundAck).payload).page_bytes;
    log::debug("migrate: round " + std::to_string(start.round) + " acknowledged");
    r.seconds = seconds_since(open.t0);
    return r;
  }

  // The destination's part of the report: CRIU's restore and the verbs
  // objects' (recreate, pin, resume). Committed already: a note that does
  // not parse costs only the report. Returns whether the destination fills
  // the memory after the resume (a LazyDone follows).
  bool add_destination_notes(const std::string& payload) {
    CommitAck a;
    try {
      a = parse_commit_ack(payload);
      if (!a.criu_restore.empty())
        rep_.criu_restore = criu_restore_from_json(nlohmann::json::parse(a.criu_restore));
      if (a.verbs_restore.empty() && a.verbs_resume.empty()) return a.filling_after_resume;
      if (!rep_.verbs) rep_.verbs.emplace();
      if (!a.verbs_restore.empty()) rep_.verbs->restore = rdma::parse_verbs_restore_stats(a.verbs_restore);
      if (!a.verbs_resume.empty()) rep_.verbs->resume = rdma::parse_verbs_resume_stats(a.verbs_resume);
    } catch (const std::exception& e) {
      rep_.error = std::string("migrated; the destination's notes on its restore were unreadable: ") + e.what();
    }
    return a.filling_after_resume;
  }

  void rollback(const std::string& reason) {
    if (conn_) {
      try {
        conn_->set_timeout(std::chrono::milliseconds(2000));
        conn_->send(FrameType::Abort, reason);
      } catch (const std::exception&) {
      }
    }
    rep_.outcome = "rolled back";
    // Before the source thaws: CRIU's lazy page server lets go of the
    // frozen tasks' memory (the destination never resumed).
    lazy_.reset();
    if (needs_resume_) {
      try {
        src_.resume();
        running_again_at_ = Clock::now();
      } catch (const std::exception& e) {
        rep_.error += std::string("; resuming the source failed too: ") + e.what();
      }
    }
  }

  SourceSide& src_;
  const SenderOptions& o_;
  MigrationReport rep_;
  PhaseClock clock_;
  std::string session_;
  std::optional<FrameConn> conn_;
  int round_ = 0;
  bool final_round_ahead_ = false;  // the receiver takes Frozen (Acceptance)
  bool late_state_ = false;         // the receiver takes LateState (Acceptance)
  bool zero_runs_ = false;          // page channels in frames (Acceptance, the source's filter)
  bool needs_resume_ = false;
  bool committing_ = false;
  bool lazy_phase_ = false;  // resumed on the destination, pages in flight
  bool filling_ = false;     // resumed on the destination, its pages copied in there
  std::unique_ptr<LazyDump> lazy_;
  std::optional<Clock::time_point> frozen_at_;
  std::optional<Clock::time_point> last_snapshot_;  // the last round's CRIU start
  double since_prev_snapshot_ = 0;
  std::optional<Clock::time_point> running_again_at_;
};

}  // namespace

MigrationReport migrate_out(SourceSide& source, const SenderOptions& opts) {
  if (opts.wire == WireSecurity::TlsCert ? !opts.cert : !opts.key)
    throw Error(opts.wire == WireSecurity::TlsCert ? "migrate: no certificates" : "migrate: no key");
  // A socket write to a peer gone must fail with EPIPE, not kill crx
  // without a report. Not only our own writes: closing the kernel-TLS page
  // channel flushes a record CRIU left half sent (after its write timed
  // out on a dead link), and that flush raised SIGPIPE in crx (exit by
  // signal 13, no report). Children get SIGPIPE back (child_process.cpp).
  ::signal(SIGPIPE, SIG_IGN);
  return Sender(source, opts).run();
}

}  // namespace crx::migrate
