#include <algorithm>
#include <cmath>
#include <optional>
#include <vector>

#include "common/error.hpp"
#include "seq/clock.hpp"
#include "seq/message.hpp"
#include "seq/mr_passes.hpp"
#include "seq/roles.hpp"

namespace crx::verbs_seq {

namespace {

// wr_id of a --mr-remote-write pass (data and FIN wr_ids hold a QP index
// below 2^16 in their upper half)
constexpr uint64_t kPassWrId = UINT64_MAX;

struct SendQp {
  uint64_t next_seq = 0;  // next number to send; at the end the announced total
  unsigned outstanding = 0;
  bool fin_posted = false;
  bool fin_done = false;
  bool dup_done = false;
  double wait_from = 0;  // Watch::capped_clock() of the last completion, or of the
                         // post that ended an idle spell (nothing outstanding)
  std::vector<uint32_t> free_slots;
  std::vector<bool> slot_is_fin;
};

class Sender {
 public:
  Sender(Session& s, const Options& o) : s_(s), o_(o), watch_(o), qps_(o.qps) {
    for (unsigned q = 0; q < o.qps; ++q) {
      for (unsigned i = o.window; i-- > 0;) qps_[q].free_slots.push_back(i);
      qps_[q].slot_is_fin.assign(o.window, false);
    }
    sum_.role = Role::Send;
    sum_.qps = o.qps;
    sum_.size = o.size;
    sum_.mr_size = o.mr_size;
  }

  Summary run() {
    std::vector<ibv_wc> wc(std::min<size_t>(size_t{o_.qps} * o_.window, 256));
    while (!all_done() && !g_stop_signal && sum_.errors == 0) {
      double now = now_s();
      uint64_t budget = rate_budget(now);
      bool stop_new = (o_.duration_s > 0 && now - watch_.start() >= o_.duration_s) || g_finish_signal;
      if (!stop_new) maybe_write_pass(now);
      // Round robin: a rate-limited budget of one message per wake-up goes
      // to the QP after the one that got the last, not always to QP 0 first
      // (every QP carries traffic at the same time, as in an application).
      for (unsigned i = 0; i < o_.qps && sum_.errors == 0; ++i) {
        unsigned q = (next_qp_ + i) % o_.qps;
        if (post_some(q, stop_new, budget) && budget == 0) next_qp_ = (q + 1) % o_.qps;
      }
      if (sum_.errors) break;

      int n = s_.cq->wait(wc.data(), static_cast<int>(wc.size()), wait_ms(now));
      now = now_s();
      if (n > 0) {
        watch_.completion(now, true);
        for (int i = 0; i < n; ++i) complete(wc[i]);
      } else if (watch_.stalled(now, outstanding() > 0)) {
        sum_.add_error("stalled: no send completion for " +
                       std::to_string(watch_.since_completion()) + " s");
      }
      watch_.maybe_progress(now, sum_, outstanding());
    }
    sum_.interrupted = g_stop_signal != 0;
    sum_.elapsed_s = now_s() - watch_.start();
    sum_.max_qp_stall_s = max_qp_stall_;
    sum_.mr_remote_passes = passes_done_;
    watch_.report(sum_);
    return sum_;
  }

 private:
  bool all_done() const {
    return std::all_of(qps_.begin(), qps_.end(), [](const SendQp& q) { return q.fin_done; });
  }
  uint64_t outstanding() const {
    uint64_t n = pass_outstanding_ ? 1 : 0;
    for (auto& q : qps_) n += q.outstanding;
    return n;
  }

  // How many more data messages the rate limit allows right now.
  uint64_t rate_budget(double now) const {
    if (o_.rate <= 0) return UINT64_MAX;
    auto allowed = static_cast<uint64_t>((now - watch_.start()) * o_.rate) + 1;
    return allowed > posted_ ? allowed - posted_ : 0;
  }

  int wait_ms(double now) const {
    int ms = 100;  // wake up now and then to check stalls, progress, the clock
    if (o_.rate > 0) {
      double next = watch_.start() + static_cast<double>(posted_) / o_.rate;
      ms = std::clamp(static_cast<int>(std::ceil((next - now) * 1000)), 0, ms);
    }
    if (o_.busy_poll) ms = 0;
    return ms;
  }

  // --mr-remote-write: one pass at a time, one period apart. Its WRITE goes
  // on QP 0; the next data message posted there announces it.
  void maybe_write_pass(double now) {
    if (o_.mr_remote_write_s <= 0 || pass_outstanding_ || now < next_pass_ || sum_.errors) return;
    next_pass_ = now + o_.mr_remote_write_s;
    ++pass_;
    stamp_pages(s_.extra_mr->data(), o_.mr_size, pass_);
    ibv_sge sge{reinterpret_cast<uintptr_t>(s_.extra_mr->data()), static_cast<uint32_t>(o_.mr_size),
                s_.extra_mr->lkey()};
    ibv_send_wr wr{};
    wr.wr_id = kPassWrId;
    wr.opcode = IBV_WR_RDMA_WRITE;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.wr.rdma.remote_addr = s_.remote_mr_addr;
    wr.wr.rdma.rkey = s_.remote_mr_rkey;
    ibv_send_wr* bad = nullptr;
    if (int err = ibv_post_send(s_.qps[0].get(), &wr, &bad)) {
      sum_.add_error(std::string("ibv_post_send of MR write pass: ") + std::strerror(err));
      return;
    }
    pass_outstanding_ = true;
    announce_ = pass_;
  }

  // Posts what the window and budget allow on QP q; returns how many data
  // messages it posted.
  unsigned post_some(unsigned q, bool stop_new, uint64_t& budget) {
    SendQp& st = qps_[q];
    unsigned data = 0;
    std::vector<ibv_send_wr> wrs;
    std::vector<ibv_sge> sges;
    wrs.reserve(st.free_slots.size());
    sges.reserve(st.free_slots.size());
    while (!st.fin_posted && !st.free_slots.empty()) {
      bool fin = stop_new || (o_.duration_s <= 0 && st.next_seq >= o_.count);
      if (!fin && budget == 0) break;
      if (!fin && q == 0 && o_.inject_skip && *o_.inject_skip == st.next_seq) {
        ++st.next_seq;  // debug: this number is never sent
        continue;
      }
      uint32_t slot = st.free_slots.back();
      st.free_slots.pop_back();
      char* buf = s_.slot(size_t{q} * o_.window + slot, o_.size);
      size_t len = o_.size;
      if (fin) {
        len = sizeof(MessageHeader);
        encode_message(buf, len, static_cast<uint16_t>(q), st.next_seq, kFlagFin, st.next_seq);
        st.fin_posted = true;
      } else {
        if (o_.verify_payload) fill_payload(buf, len, st.next_seq);
        if (q == 0 && announce_) {
          encode_message(buf, len, 0, st.next_seq, kFlagMrPass, *announce_);
          announce_.reset();
        } else {
          encode_message(buf, len, static_cast<uint16_t>(q), st.next_seq, 0, 0);
        }
        bool dup_now = q == 0 && o_.inject_dup && *o_.inject_dup == st.next_seq && !st.dup_done;
        if (dup_now)
          st.dup_done = true;  // debug: the same number goes out once more
        else
          ++st.next_seq;
        --budget;
        ++posted_;
        ++data;
      }
      st.slot_is_fin[slot] = fin;
      if (st.outstanding++ == 0) st.wait_from = watch_.capped_clock();
      sges.push_back({reinterpret_cast<uintptr_t>(buf), static_cast<uint32_t>(len), s_.buffer->lkey()});
      ibv_send_wr wr{};
      wr.wr_id = (uint64_t{q} << 32) | slot;
      wr.opcode = IBV_WR_SEND;
      wr.send_flags = IBV_SEND_SIGNALED;
      wr.num_sge = 1;
      wrs.push_back(wr);
    }
    if (wrs.empty()) return data;
    for (size_t i = 0; i < wrs.size(); ++i) {
      wrs[i].sg_list = &sges[i];
      wrs[i].next = i + 1 < wrs.size() ? &wrs[i + 1] : nullptr;
    }
    ibv_send_wr* bad = nullptr;
    if (int err = ibv_post_send(s_.qps[q].get(), wrs.data(), &bad))
      sum_.add_error("ibv_post_send on QP " + std::to_string(q) + ": " + std::strerror(err));
    return data;
  }

  void complete(const ibv_wc& wc) {
    if (wc.wr_id == kPassWrId) {
      pass_outstanding_ = false;
      if (wc.status != IBV_WC_SUCCESS)
        sum_.add_error(std::string("MR write pass completion: ") + wc_status_name(wc.status));
      else
        passes_done_ = pass_;
      return;
    }
    auto q = static_cast<unsigned>(wc.wr_id >> 32);
    auto slot = static_cast<uint32_t>(wc.wr_id & 0xffffffff);
    if (q >= o_.qps || slot >= o_.window) {
      sum_.add_error("completion with an unknown wr_id");
      return;
    }
    SendQp& st = qps_[q];
    double t = watch_.capped_clock();
    max_qp_stall_ = std::max(max_qp_stall_, t - st.wait_from);
    st.wait_from = t;
    --st.outstanding;
    st.free_slots.push_back(slot);
    if (wc.status != IBV_WC_SUCCESS) {
      sum_.add_error("send completion on QP " + std::to_string(q) + ": " + wc_status_name(wc.status));
      return;
    }
    if (st.slot_is_fin[slot]) {
      st.fin_done = true;
    } else {
      ++sum_.messages;
      sum_.bytes += o_.size;
    }
  }

  Session& s_;
  const Options& o_;
  Watch watch_;
  std::vector<SendQp> qps_;
  Summary sum_;
  uint64_t posted_ = 0;  // data messages posted, all QPs
  unsigned next_qp_ = 0;  // where the next round of posting starts
  double max_qp_stall_ = 0;
  // --mr-remote-write
  uint64_t pass_ = 0;         // the last pass posted
  uint64_t passes_done_ = 0;  // the last pass completed
  bool pass_outstanding_ = false;
  std::optional<uint64_t> announce_;  // for the next data message on QP 0
  double next_pass_ = 0;
};

}  // namespace

Summary run_sender(Session& s, const Options& o) { return Sender(s, o).run(); }

}  // namespace crx::verbs_seq
