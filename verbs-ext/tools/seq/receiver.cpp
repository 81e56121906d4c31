#include <chrono>
#include <cstdio>
#include <cstring>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "common/error.hpp"
#include "seq/checker.hpp"
#include "seq/clock.hpp"
#include "seq/message.hpp"
#include "seq/mr_passes.hpp"
#include "seq/roles.hpp"

namespace crx::verbs_seq {

namespace {

// Slot i belongs to QP i / window; with an SRQ any QP may fill any slot.
ibv_recv_wr receive_wr(Session& s, const Options& o, uint32_t slot, ibv_sge& sge) {
  sge = {reinterpret_cast<uintptr_t>(s.slot(slot, o.size)), static_cast<uint32_t>(o.size),
         s.buffer->lkey()};
  ibv_recv_wr wr{};
  wr.wr_id = slot;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  return wr;
}

// Posts the given slots, chained per destination queue.
int post_receives(Session& s, const Options& o, const std::vector<uint32_t>& slots) {
  if (slots.empty()) return 0;
  std::vector<ibv_recv_wr> wrs(slots.size());
  std::vector<ibv_sge> sges(slots.size());
  for (size_t i = 0; i < slots.size(); ++i) wrs[i] = receive_wr(s, o, slots[i], sges[i]);
  ibv_recv_wr* bad = nullptr;
  if (o.srq) {
    for (size_t i = 0; i + 1 < wrs.size(); ++i) wrs[i].next = &wrs[i + 1];
    return ibv_post_srq_recv(s.srq.get(), wrs.data(), &bad);
  }
  // One post per WR keeps the per-QP grouping trivial; receives are cheap.
  for (auto& wr : wrs)
    if (int err = ibv_post_recv(s.qps[wr.wr_id / o.window].get(), &wr, &bad)) return err;
  return 0;
}

// --mr-rewrite: the registered --mr-size memory changes while the traffic
// runs, a sixteenth of its pages per pass, and every page is checked
// against what it was last given (kept in ordinary memory) before each
// pass. A move that restores a page of the MR stale fails the next check.
class MrRewriter {
 public:
  MrRewriter(char* mr, size_t bytes, double period_s)
      : mr_(mr), period_s_(period_s), expected_(bytes / kPage, fill_word()) {}

  // Checks and rewrites when a period has passed; "" or what was wrong.
  std::string maybe_pass(double now) {
    if (next_ == 0) next_ = now + period_s_;
    if (now < next_) return {};
    next_ = now + period_s_;
    if (std::string bad = check(); !bad.empty()) return bad;
    for (size_t i = pass_ % 16; i < expected_.size(); i += 16) {
      expected_[i] = (uint64_t{i} << 32) | (pass_ + 1);
      std::memcpy(mr_ + i * kPage, &expected_[i], sizeof(uint64_t));
    }
    ++pass_;
    return {};
  }

  std::string check() const {
    for (size_t i = 0; i < expected_.size(); ++i) {
      uint64_t v;
      std::memcpy(&v, mr_ + i * kPage, sizeof v);
      if (v != expected_[i])
        return "MR page " + std::to_string(i) + " holds " + hex(v) + ", was given " +
               hex(expected_[i]) + " (after " + std::to_string(pass_) + " rewrites)";
    }
    return {};
  }

  uint64_t passes() const { return pass_; }

 private:
  static constexpr size_t kPage = 4096;
  static uint64_t fill_word() {
    uint64_t w;
    std::memset(&w, kExtraFill, sizeof w);
    return w;
  }
  static std::string hex(uint64_t v) {
    char b[24];
    std::snprintf(b, sizeof b, "%#llx", static_cast<unsigned long long>(v));
    return b;
  }

  char* mr_;
  double period_s_;
  double next_ = 0;
  uint64_t pass_ = 0;
  std::vector<uint64_t> expected_;
};

class Receiver {
 public:
  Receiver(Session& s, const Options& o) : s_(s), o_(o), watch_(o), checkers_(o.qps) {
    for (unsigned q = 0; q < o.qps; ++q) qp_index_[s.qps[q]->qp_num] = q;
    sum_.role = Role::Recv;
    sum_.qps = o.qps;
    sum_.srq = o.srq;
    sum_.size = o.size;
    sum_.mr_size = o.mr_size;
    if (o.mr_rewrite_s > 0)
      rewriter_.emplace(s.extra_mr->data(), o.mr_size, o.mr_rewrite_s);
    if (o.mr_remote_write_s > 0) passes_.emplace(s.extra_mr->data(), o.mr_size, kExtraFill);
  }

  Summary run() {
    std::vector<ibv_wc> wc(std::min<size_t>(size_t{o_.qps} * o_.window, 256));
    std::vector<uint32_t> repost;
    while (fins_ < o_.qps && !g_stop_signal && !fatal_) {
      if (o_.poll_every_s > 0)
        std::this_thread::sleep_for(std::chrono::duration<double>(o_.poll_every_s));
      int n = s_.cq->wait(wc.data(), static_cast<int>(wc.size()), o_.busy_poll ? 0 : 100);
      double now = now_s();
      if (n > 0) {
        watch_.completion(now, true);
        repost.clear();
        for (int i = 0; i < n; ++i) receive(wc[i], repost);
        if (!fatal_)
          if (int err = post_receives(s_, o_, repost)) {
            sum_.add_error(std::string("re-posting receives: ") + std::strerror(err));
            fatal_ = true;
          }
      } else if (watch_.stalled(now, true)) {
        sum_.add_error("stalled: no message for " + std::to_string(watch_.since_completion()) + " s");
        fatal_ = true;
      }
      if (rewriter_)
        if (std::string bad = rewriter_->maybe_pass(now); !bad.empty()) {
          sum_.add_error(bad);
          fatal_ = true;
        }
      // Between announcements too: a page restored stale is found before
      // the next pass overwrites it.
      if (passes_ && now >= next_pass_check_) {
        next_pass_check_ = now + 0.05;
        check_passes();
      }
      watch_.maybe_progress(now, sum_, o_.qps - fins_);
    }
    if (rewriter_ && !fatal_)
      if (std::string bad = rewriter_->check(); !bad.empty()) sum_.add_error(bad);
    if (passes_ && !fatal_) check_passes();
    if (passes_) sum_.mr_remote_passes = passes_->announced();
    for (auto& c : checkers_) {
      if (!c.finished()) c.finish(c.expected());  // the total is unknown: judge what came
      auto& t = c.counts();
      sum_.seq.received += t.received;
      sum_.seq.in_order += t.in_order;
      sum_.seq.out_of_order += t.out_of_order;
      sum_.seq.duplicates += t.duplicates;
      sum_.seq.missing += t.missing;
      sum_.seq.beyond_total += t.beyond_total;
    }
    if (fins_ < o_.qps && !g_stop_signal && sum_.errors == 0)
      sum_.add_error("ended before every QP finished");
    sum_.interrupted = g_stop_signal != 0;
    sum_.elapsed_s = now_s() - watch_.start();
    watch_.report(sum_);
    return sum_;
  }

 private:
  void check_passes() {
    if (std::string bad = passes_->check(); !bad.empty()) {
      sum_.add_error(bad);
      fatal_ = true;
    }
  }

  void receive(const ibv_wc& wc, std::vector<uint32_t>& repost) {
    if (wc.status != IBV_WC_SUCCESS) {
      // A QP in error flushes every receive: report the first cause only.
      sum_.add_error(std::string("receive completion: ") + wc_status_name(wc.status));
      fatal_ = true;
      return;
    }
    auto slot = static_cast<uint32_t>(wc.wr_id);
    auto it = qp_index_.find(wc.qp_num);
    if (slot >= size_t{o_.qps} * o_.window || it == qp_index_.end()) {
      sum_.add_error("completion for an unknown slot or QP number " + std::to_string(wc.qp_num));
      return;
    }
    repost.push_back(slot);
    unsigned q = it->second;
    MessageHeader h{};
    switch (decode_message(s_.slot(slot, o_.size), wc.byte_len, h, o_.verify_payload)) {
      case Decode::Ok: break;
      case Decode::Short: return sum_.add_error("short message on QP " + std::to_string(q));
      case Decode::BadMagic: return sum_.add_error("message without magic on QP " + std::to_string(q));
      case Decode::BadTrailer: return sum_.add_error("torn message (trailer) on QP " + std::to_string(q));
      case Decode::BadPayload: return sum_.add_error("corrupt payload on QP " + std::to_string(q));
    }
    if (h.qp_index != q)
      return sum_.add_error("message for QP " + std::to_string(h.qp_index) + " arrived on QP " +
                            std::to_string(q));
    SeqChecker& c = checkers_[q];
    if (c.finished()) return sum_.add_error("message after the end on QP " + std::to_string(q));
    if (h.flags & kFlagFin) {
      c.finish(h.total);
      ++fins_;
      return;
    }
    if (wc.byte_len != o_.size)
      sum_.add_error("message of " + std::to_string(wc.byte_len) + " bytes on QP " + std::to_string(q));
    c.on_message(h.seq);
    if (passes_ && (h.flags & kFlagMrPass)) {
      passes_->announced(h.total);
      check_passes();
    }
    ++sum_.messages;
    sum_.bytes += wc.byte_len;
  }

  Session& s_;
  const Options& o_;
  Watch watch_;
  std::vector<SeqChecker> checkers_;
  std::unordered_map<uint32_t, unsigned> qp_index_;
  Summary sum_;
  unsigned fins_ = 0;
  bool fatal_ = false;
  std::optional<MrRewriter> rewriter_;
  std::optional<MrPassChecker> passes_;
  double next_pass_check_ = 0;
};

}  // namespace

void post_initial_receives(Session& s, const Options& o) {
  std::vector<uint32_t> all(size_t{o.qps} * o.window);
  for (uint32_t i = 0; i < all.size(); ++i) all[i] = i;
  if (int err = post_receives(s, o, all)) throw_errno("posting the initial receives", err);
}

Summary run_receiver(Session& s, const Options& o) { return Receiver(s, o).run(); }

}  // namespace crx::verbs_seq
