#include "migrate/receiver.hpp"

#include <dirent.h>
#include <signal.h>
#include <sys/stat.h>

#include <cctype>
#include <memory>
#include <optional>

#include "common/error.hpp"
#include "common/fs.hpp"
#include "common/log.hpp"
#include "migrate/image_stream.hpp"
#include "migrate/ram_dir.hpp"
#include "migrate/rootfs_stream.hpp"
#include "migrate/stale_sessions.hpp"
#include "migrate/tls_session.hpp"
#include "state/store.hpp"

namespace crx::migrate {
namespace {

using Clock = std::chrono::steady_clock;

bool safe_id(const std::string& id) {
  if (id.empty() || id.size() > 1024 || id == "." || id == "..") return false;
  for (char c : id) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.' ||
          c == '+'))
      return false;
  }
  return true;
}

class Receiver {
 public:
  Receiver(TcpListener& l, UniqueFd control, const std::string& peer, DestinationSide& d,
           const ReceiverOptions& o)
      : listener_(l), conn_(std::move(control), "sender " + peer), dest_(d), o_(o),
        clock_(rep_, o.progress) {
    rep_.role = "receiver";
    rep_.peer = peer;
    conn_.set_timeout(o.timeout);
    detect_dead_peer(conn_.fd(), o.timeout);
  }

  MigrationReport run() {
    try {
      clock_.begin("authenticate");
      AuthPeer who =
          authenticate_as_server(conn_, Credentials{o_.wire, o_.key, o_.cert, o_.cipher});
      rep_.security = wire_security_name(o_.wire);
      if (who.channel != "control") throw Error("expected a control connection, got " + who.channel);
      session_ = who.session;
      clock_.begin("manifest");
      manifest_ = parse_manifest(conn_.expect(FrameType::Manifest).payload);
      rep_.id = manifest_.id;
      if (manifest_.inventory) rep_.inventory = *manifest_.inventory;
      if (!safe_id(manifest_.id)) throw Error("refusing container id \"" + manifest_.id + "\"");
      if (manifest_.lazy) check_lazy_manifest();
      accept_ = dest_.accept(manifest_);
      if (manifest_.lazy && !accept_.lazy)
        throw Error("this destination cannot restore post-copy (--lazy)", Cause::Unsupported);
      may_fill_after_resume_ = o_.fill_after_resume != FillAfterResume::Never &&
                               manifest_.fill_after_resume && !manifest_.lazy && !manifest_.rdma &&
                               dest_.can_fill_after_resume();
      accept_.final_round_ahead = true;  // a Frozen frame tells when the window opens
      accept_.zero_runs = true;          // page channels may come in frames (zero_runs.hpp)
      accept_.lz4_frames = true;         // and compressed ones (PageRelay decodes them)
      accept_.uts_ipc_anew = true;       // PreparedRestore makes them (uts_ipc_anew.hpp)
      accept_.late_state = true;         // read and set at the restore's hold
      make_session_dir();
      // Before the Accept: the sender freezes right after it when it runs
      // no pre-copy round. A bundle still to come is prepared once here.
      if (o_.prepare_restore && !accept_.need_rootfs) prepare_restore();
      conn_.send(FrameType::Accept, to_json(accept_));
      if (accept_.need_rootfs) {
        clock_.begin("rootfs");
        rep_.rootfs_bytes = receive_bundle(conn_, accept_.bundle);
        if (o_.prepare_restore) prepare_restore();
      }
      serve_rounds();
      rep_.outcome = "migrated";
    } catch (const std::exception& e) {
      clock_.end();
      rep_.error = e.what();
      rep_.outcome = "rolled back";
      conn_.send_error_quietly(e.what());
      if (restore_started_) dest_.discard(manifest_);
      if (lazy_phase_) {
        // Killed before the daemon goes (below): its userfaultfd must
        // outlive the tasks, or their missing pages would read as zeros.
        dest_.discard(manifest_);
        rep_.outcome = filling_ ? "fill failed" : "lazy phase failed";
        rep_.error = filling_
                         ? "filling the memory failed after the container resumed here: " +
                               rep_.error +
                               "; its copy here was killed (the source keeps it frozen as it "
                               "was at the freeze)"
                         : "the lazy phase failed after the container resumed here: " +
                               rep_.error +
                               "; it lacked memory that only the source had, so its copy here "
                               "was killed (the source keeps it frozen as it was at the freeze)";
      } else if (running_at_) {
        // Every page in place, only the word to the source was lost: the
        // container is this host's (the source stays frozen, in doubt).
        rep_.outcome = "migrated";
      }
    }
    clock_.end();
    lazy_pages_.reset();
    ready_fill_.reset();  // a daemon readied for a fill that never came
    page_sink_.reset();
    // Restored: nothing left to release. Not: its cgroup, mounts, state
    // dir and waiting criu go, before the work dir below them does.
    prepared_.reset();
    if (made_dir_) {
      try {
        remove_tree(dir_);
      } catch (const std::exception&) {
      }
    }
    rep_.wire_bytes = conn_.bytes_sent() + conn_.bytes_received();
    rep_.total_seconds = clock_.since_start();
    if (frozen_at_ && running_at_) {
      rep_.downtime_seconds = std::chrono::duration<double>(*running_at_ - *frozen_at_).count();
    }
    if (o_.progress) o_.progress("done");
    return rep_;
  }

 private:
  void make_session_dir() {
    dir_ = o_.image_root + "/" + manifest_.id + "-" + session_.substr(0, 8);
    mkdir_p(o_.image_root, 0700);
    if (::mkdir(dir_.c_str(), 0700) != 0) throw_errno("mkdir " + dir_);
    made_dir_ = true;
    // Who restores what here, for the next receiver if this one dies.
    began_ = state::now_rfc3339();
    write_session_marker(dir_, manifest_.id, false, began_);
  }

  // CRIU's work dir for the restore (and the lazy-pages daemon's).
  std::string work_dir() const { return dir_ + "/restore.work"; }

  // What the restore can do before the final images: while the source
  // runs (README.md, "Prepared restore"). A refusal here rolls back before
  // any freeze.
  void prepare_restore() {
    clock_.begin("prepare");
    auto t0 = Clock::now();
    prepared_ = dest_.prepare_restore(manifest_, accept_, dir_, work_dir());
    accept_.prepare_seconds = std::chrono::duration<double>(Clock::now() - t0).count();
    accept_.cgroup_path = prepared_->cgroup_path();
    rep_.prepare_seconds = accept_.prepare_seconds;
  }

  void serve_rounds() {
    ImageSink sink(dir_, o_.max_image_bytes);
    std::optional<RoundStart> round;
    Clock::time_point round_t0;
    int last_round = 0;
    for (;;) {
      Frame f = conn_.receive();
      bool image = f.type == FrameType::ImageData || f.type == FrameType::ImageClose ||
                   f.type == FrameType::ImageSymlink;
      if (image && !round) throw Error("image data outside a round");
      if (sink.handle(f)) continue;
      switch (f.type) {
        case FrameType::RoundStart: {
          if (round) throw Error("round-start inside round " + std::to_string(round->round));
          round = parse_round_start(f.payload);
          if (round->round != last_round + 1) throw Error("rounds out of order");
          if (manifest_.lazy && !round->final)
            throw Error("a pre-copy round in a post-copy (--lazy) migration");
          // A sender that opens the final round ahead of the freeze says
          // when it froze (Frozen); an older one froze before this frame.
          const bool ahead = round->final && round->ahead;
          if (round->final && !ahead) frozen_at_ = Clock::now();
          clock_.begin(!round->final ? "pre-copy " + std::to_string(round->round)
                       : ahead       ? "open final round"
                                     : "checkpoint+transfer");
          round_t0 = Clock::now();
          make_round_dir(*round);
          // Before the page server's ready, which lets the sender freeze.
          if (ahead) ready_fill(round_dir(round->round));
          start_round(*round);
          break;
        }
        case FrameType::Frozen: {
          if (!round || !round->final || frozen_at_)
            throw Error("a frozen frame outside the final round's opening");
          frozen_at_ = round_t0 = Clock::now();
          clock_.begin("checkpoint+transfer");
          break;
        }
        case FrameType::RoundDone: {
          if (!round) throw Error("round-done without a round");
          if (round->ahead && !frozen_at_) throw Error("round-done before the source froze");
          RoundDone done = parse_round_done(f.payload);
          std::string rdir = dir_ + "/" + std::to_string(round->round);
          if (lazy_channel_) {
            // Every image is here: the daemon reads them, then waits for
            // the restore to hand it the tasks' userfaultfds.
            lazy_pages_ = dest_.start_lazy_pages(rdir, work_dir(), std::move(lazy_channel_));
          } else {
            page_sink_->wait(o_.timeout);
            page_sink_.reset();
          }
          unwatch_page_sink();
          RoundReport r{round->round, round->final, page_image_bytes(rdir), done.image_bytes,
                        std::chrono::duration<double>(Clock::now() - round_t0).count()};
          rep_.rounds.push_back(r);
          conn_.send(FrameType::RoundAck, to_json(RoundAck{r.page_bytes}));
          last_round = round->round;
          final_seen_ = round->final;
          round.reset();
          break;
        }
        case FrameType::DumpDone:
          if (round || !final_seen_) throw Error("dump-done before the final dump");
          restore(dir_ + "/" + std::to_string(last_round));
          return;
        case FrameType::Abort:
          throw Error(with_page_failure("the sender aborted: " + f.payload));
        case FrameType::Error:
          throw Error(with_page_failure("the sender failed: " + f.payload));
        default:
          throw Error("unexpected " + std::string(frame_type_name(f.type)) + " frame from " +
                      conn_.peer());
      }
    }
  }

  // A sender whose page channel broke says only that its page server
  // went away; what this side saw first (an altered record) comes first.
  std::string with_page_failure(const std::string& what) const {
    std::string why = page_sink_ ? page_sink_->failure() : std::string();
    return why.empty() ? what : why + "; " + what;
  }

  std::string round_dir(int round) const { return dir_ + "/" + std::to_string(round); }

  void make_round_dir(const RoundStart& r) {
    const std::string rdir = round_dir(r.round);
    if (::mkdir(rdir.c_str(), 0700) != 0) throw_errno("mkdir " + rdir);
    if (!r.parent.empty()) {
      if (r.parent != "../" + std::to_string(r.round - 1)) throw Error("bad parent " + r.parent);
      // The page server (and the fill's plan) find the parent's pagemaps
      // through this link.
      if (::symlink(r.parent.c_str(), (rdir + "/parent").c_str()) != 0)
        throw_errno("symlink " + rdir + "/parent");
    }
  }

  // The round's dir exists (make_round_dir).
  void start_round(const RoundStart& r) {
    const std::string rdir = round_dir(r.round);
    conn_.send(FrameType::PageServerReady);
    // Post-copy: the channel waits for the images, which the lazy-pages
    // daemon needs to start (RoundDone).
    if (manifest_.lazy) {
      lazy_channel_ = accept_page_channel();
      return;
    }
    page_sink_ = dest_.start_page_server(rdir, accept_page_channel(), r.zero_runs);
    watch_page_sink();
  }

  // While a round's pages flow, the control link may stay silent for
  // longer than a network step's time-out (a pre-copy round of a large
  // container on a slow link): its waits go on as long as the page sink
  // keeps receiving. The sink alone holds the channel: a copy kept here
  // would keep a dead page server's socket open, and the sender's CRIU
  // blocked on it, until this time-out.
  void watch_page_sink() {
    page_sink_seen_ = 0;
    conn_.set_busy_check([this] {
      if (!page_sink_ || !page_sink_->failure().empty()) return false;
      uint64_t now = page_sink_->bytes_so_far();
      if (now == page_sink_seen_) return false;
      page_sink_seen_ = now;
      return true;
    });
  }

  void unwatch_page_sink() { conn_.set_busy_check({}); }

  // Post-copy needs the memory in place before the resume where the
  // hardware reads it: pinned MRs are written by the NIC, not faulted in.
  void check_lazy_manifest() const {
    if (manifest_.rdma)
      throw Error("post-copy (--lazy) of " + manifest_.id +
                      ", which has verbs objects: their pinned memory must be here before it "
                      "resumes; migrate it without --lazy",
                  Cause::Unsupported);
  }

  // After the resume: the daemon fetches what the tasks fault on and
  // pulls the rest in the background; every page here means the source
  // may go (LazyDone). Filled after the resume: the same, from the
  // images here.
  void lazy_phase() {
    lazy_phase_ = true;
    clock_.begin(filling_ ? "fill after resume" : "lazy pages");
    LazyStats s = lazy_pages_->wait(o_.lazy_timeout);
    s.seconds = std::chrono::duration<double>(Clock::now() - *running_at_).count();
    (filling_ ? rep_.fill : rep_.lazy) = s;
    lazy_pages_.reset();
    lazy_phase_ = false;
    conn_.send(FrameType::LazyDone, to_json(s));
  }

  // The least memory to fill after the resume, and whether the rounds so
  // far brought that much: the pages to fill hold the first round's data,
  // so its pages images bound them.
  uint64_t fill_min_bytes() const {
    return o_.fill_after_resume == FillAfterResume::Always ? 1 : kFillAfterResumeMinBytes;
  }
  bool may_fill_rounds() const {
    return may_fill_after_resume_ && !rep_.rounds.empty() &&
           rep_.rounds.front().page_bytes >= fill_min_bytes();
  }

  // The final round opens before the freeze: what the fill can ready
  // without its images (the lazy-pages daemon's start, 0.1-0.2 s of a
  // guest's window) is done now, and plan_fill() decides. A failure here
  // costs only that head start. Only beside a prepared restore, whose work
  // dir the daemon listens in (without one, all of it is in the window).
  void ready_fill(const std::string& round_dir) {
    if (!prepared_ || !may_fill_rounds()) return;
    try {
      ready_fill_ = dest_.prepare_fill(round_dir, work_dir());
    } catch (const std::exception& e) {
      log::warn(std::string("the fill after the resume is not readied ahead: ") + e.what());
    }
  }

  // Leaves the pages the rounds brought to a lazy-pages daemon here (the
  // one ready_fill() started, if any), to be filled after the resume, when
  // there are enough of them that CRIU's copy in the window costs more
  // than what the fill adds to it. A plan that fails costs only that:
  // images it rewrote restore as well with every page copied in
  // (fill_plan.hpp).
  void plan_fill(const std::string& images_dir) {
    // What was readied goes with this call, used or not.
    std::unique_ptr<ReadyFill> ahead = std::move(ready_fill_);
    // Below the minimum, the plan (which reads every round's pagemaps, in
    // the frozen window) cannot find enough.
    if (!may_fill_rounds()) return;
    // Verbs objects made since the manifest, which listed none: their
    // pinned memory must be in place before the resume, as for --lazy.
    if (path_exists(images_dir + "/" + rdma::kVerbsDumpFile)) return;
    try {
      lazy_pages_ = dest_.start_fill(images_dir, work_dir(), fill_min_bytes(), std::move(ahead));
    } catch (const std::exception& e) {
      log::warn(std::string("restoring every page before the resume: ") + e.what());
    }
    if (!lazy_pages_) return;
    prepared_->restore_pages_lazily();
    filling_ = true;
  }

  // The sender's next connection must be this session's page channel.
  UniqueFd accept_page_channel() {
    std::string peer;
    UniqueFd fd = listener_.accept(o_.timeout, &peer);
    FrameConn pc(std::move(fd), "page channel " + peer);
    pc.set_timeout(o_.timeout);
    detect_dead_peer(pc.fd(), o_.timeout);
    AuthPeer who =
        authenticate_as_server(pc, Credentials{o_.wire, o_.key, o_.cert, o_.cipher});
    if (who.channel != "pages" || who.session != session_) {
      pc.send_error_quietly("busy: another migration is in progress");
      throw Error("a connection from " + peer + " arrived where the page channel was expected");
    }
    if (pc.tls()) rep_.tls_cipher = tls13_suite_name(pc.tls()->negotiated());
    UniqueFd channel = pc.release_fd();  // TLS: now kernel TLS
    if (o_.wire != WireSecurity::Plaintext)
      rep_.security = std::string(wire_security_name(o_.wire)) + "+ktls";
    return channel;
  }

  void restore(const std::string& images_dir) {
    clock_.begin("restore");
    // Not prepared ahead (migration.prepare_restore: false): all of it now,
    // in the frozen window.
    if (!prepared_) prepared_ = dest_.prepare_restore(manifest_, accept_, dir_, work_dir());
    plan_fill(images_dir);
    restore_started_ = true;
    bool held = false;
    auto hold = [&] {
      held = true;
      // What the sender read after the images (sent while this side
      // restored), set before the tasks run; a failure undoes the restore
      // as any before the commit.
      LateState late = parse_late_state(conn_.expect(FrameType::LateState).payload);
      if (!late.net_sysctls.empty()) prepared_->set_net_sysctls(late.net_sysctls);
      clock_.begin("wait for commit");
      conn_.send(FrameType::RestoreOk);
      // While the RestoreOk and the Commit travel (a round trip through
      // the source's checks): the state is written now, not after the
      // resume, where it came between the running container and the ack
      // (and shared this vCPU with the container and CRIU's exit).
      prepared_->save_state_ahead();
      conn_.set_timeout(o_.commit_timeout);
      conn_.expect(FrameType::Commit);
      try {
        write_session_marker(dir_, manifest_.id, true, began_);
      } catch (const std::exception&) {
      }
      conn_.set_timeout(o_.timeout);
      clock_.begin("resume");
    };
    // The container runs here: the sender's downtime ends with the ack,
    // before CRIU's exit and the restore's clean-up.
    bool acked = false;
    auto resumed = [&] {
      running_at_ = Clock::now();
      restore_started_ = false;  // it is ours now, even if the ack gets lost
      clock_.end();
      rep_.verbs = VerbsReport::read(images_dir);
      rep_.criu_restore = checkpoint::read_criu_restore_stats(work_dir());
      CommitAck ack = commit_ack(images_dir, rep_.criu_restore);
      ack.filling_after_resume = filling_;
      conn_.send(FrameType::CommitAck, to_json(ack));
      acked = true;
    };
    try {
      dest_.restore(*prepared_, images_dir, manifest_, hold, resumed);
    } catch (const std::exception& e) {
      if (!acked) {
        rep_.verbs = VerbsReport::read(images_dir);  // why the verbs objects failed, if they did
        throw;
      }
      log::warn("receive: " + manifest_.id + " runs here; after its resume: " + e.what());
    }
    if (!held) hold();      // a restore that could not pause before resuming
    if (!acked) resumed();  // nor tell when the container ran
    if (lazy_pages_) lazy_phase();
  }

  // The verbs plugin's, crx's and CRIU's notes on the restore, for the
  // sender's report.
  static CommitAck commit_ack(const std::string& images_dir,
                              const std::optional<checkpoint::CriuRestoreStats>& criu) {
    CommitAck a;
    if (criu) a.criu_restore = criu_restore_json(*criu).dump();
    a.verbs_restore = read_file_if_present(images_dir + "/" + rdma::kVerbsRestoreFile).value_or("");
    a.verbs_resume = read_file_if_present(images_dir + "/" + rdma::kVerbsResumeFile).value_or("");
    return a;
  }

  TcpListener& listener_;
  FrameConn conn_;
  DestinationSide& dest_;
  const ReceiverOptions& o_;
  MigrationReport rep_;
  PhaseClock clock_;
  std::string session_;
  Manifest manifest_;
  Acceptance accept_;
  std::string dir_;
  std::string began_;
  bool made_dir_ = false;
  bool restore_started_ = false;
  bool final_seen_ = false;
  bool lazy_phase_ = false;  // resumed here, memory still coming
  bool may_fill_after_resume_ = false;  // what the sender and this host allow
  bool filling_ = false;                // this restore's pages come after the resume
  std::unique_ptr<ReadyFill> ready_fill_;  // readied when the final round opened
  std::unique_ptr<PageSink> page_sink_;
  uint64_t page_sink_seen_ = 0;  // bytes_so_far() at the last time-out
  std::unique_ptr<PreparedRestore> prepared_;  // from the Accept (or the restore) on
  UniqueFd lazy_channel_;                  // post-copy: until the images are in
  std::unique_ptr<LazyPages> lazy_pages_;  // post-copy: from the images to the last page
  std::optional<Clock::time_point> frozen_at_, running_at_;
};

}  // namespace

MigrationReport receive_one(TcpListener& listener, UniqueFd control, const std::string& peer,
                            DestinationSide& dest, const ReceiverOptions& opts) {
  if (opts.wire == WireSecurity::TlsCert ? !opts.cert : !opts.key)
    throw Error(opts.wire == WireSecurity::TlsCert ? "receive: no certificates" : "receive: no key");
  ::signal(SIGPIPE, SIG_IGN);  // as migrate_out: a peer gone is an error, not a kill
  return Receiver(listener, std::move(control), peer, dest, opts).run();
}

}  // namespace crx::migrate
