#include "seq/session.hpp"

#include <nlohmann/json.hpp>
#include <random>

#include "common/error.hpp"
#include "seq/exchange.hpp"

namespace crx::verbs_seq {

namespace {

constexpr int kProtocol = 1;

const char* role_name(Role r) { return r == Role::Send ? "send" : "recv"; }

nlohmann::json describe(const Session& s, const Options& o) {
  nlohmann::json qps = nlohmann::json::array();
  for (size_t i = 0; i < s.qps.size(); ++i) qps.push_back({s.qps[i]->qp_num, s.psns[i]});
  nlohmann::json mr = nullptr;
  if (o.role == Role::Recv && o.mr_remote_write_s > 0)
    mr = {{"addr", reinterpret_cast<uintptr_t>(s.extra_mr->data())},
          {"rkey", s.extra_mr->rkey()},
          {"size", o.mr_size}};
  return {{"mr", mr},
          {"crx_verbs_seq", kProtocol},
          {"role", role_name(o.role)},
          {"qps", o.qps},
          {"size", o.size},
          {"lid", s.local.lid},
          {"gid", gid_to_string(s.local.gid)},
          {"mtu", static_cast<int>(s.local.mtu)},
          {"qp", qps},
          {"mr_remote_write", o.mr_remote_write_s > 0}};
}

void check_peer(const nlohmann::json& peer, const Options& o) {
  if (peer.value("crx_verbs_seq", 0) != kProtocol)
    throw Error("the peer is not crx-verbs-seq protocol " + std::to_string(kProtocol));
  if (peer.at("role").get<std::string>() == role_name(o.role))
    throw Error(std::string("both sides run as ") + role_name(o.role));
  if (peer.at("qps").get<unsigned>() != o.qps)
    throw Error("the peer uses " + std::to_string(peer.at("qps").get<unsigned>()) + " QPs, we use " +
                std::to_string(o.qps));
  if (peer.at("size").get<size_t>() != o.size)
    throw Error("the peer uses --size " + std::to_string(peer.at("size").get<size_t>()) +
                ", we use " + std::to_string(o.size));
  if (peer.at("qp").size() != o.qps) throw Error("the peer listed a wrong number of QPs");
  if (peer.value("mr_remote_write", false) != (o.mr_remote_write_s > 0))
    throw Error("only one side runs with --mr-remote-write");
  if (o.role == Role::Send && o.mr_remote_write_s > 0 &&
      peer.at("mr").at("size").get<size_t>() != o.mr_size)
    throw Error("the peer's --mr-size is " + std::to_string(peer["mr"]["size"].get<size_t>()) +
                ", ours " + std::to_string(o.mr_size));
}

}  // namespace

Session open_session(const Options& o) {
  Session s;
  s.ctx = open_device(o.device);
  s.settings.port = o.ib_port;
  s.settings.gid_index = pick_gid_index(s.ctx.get(), o.ib_port, o.gid_index);
  s.settings.timeout = o.timeout;
  s.settings.retry_cnt = o.retry_cnt;
  s.settings.rnr_retry = o.rnr_retry;
  const bool remote_target = o.role == Role::Recv && o.mr_remote_write_s > 0;
  if (remote_target) s.settings.access = IBV_ACCESS_REMOTE_WRITE;
  s.local = query_local(s.ctx.get(), o.ib_port, s.settings.gid_index);

  s.pd.reset(ibv_alloc_pd(s.ctx.get()));
  if (!s.pd) throw_errno("ibv_alloc_pd");
  // Sender: window sends per QP; receiver: window receives per QP.
  int cq_entries = static_cast<int>(o.qps * o.window + 1);
  s.cq = std::make_unique<CompletionQueue>(s.ctx.get(), cq_entries, o.busy_poll);
  s.buffer = std::make_unique<Buffer>(s.pd.get(), size_t{o.qps} * o.window * o.size);
  if (o.mr_size)
    s.extra_mr = std::make_unique<Buffer>(s.pd.get(), o.mr_size, kExtraFill,
                                          remote_target ? IBV_ACCESS_REMOTE_WRITE : 0, o.mr_huge);

  if (o.srq) {
    ibv_srq_init_attr sa{};
    sa.attr.max_wr = o.qps * o.window;
    sa.attr.max_sge = 1;
    s.srq.reset(ibv_create_srq(s.pd.get(), &sa));
    if (!s.srq) throw_errno("ibv_create_srq with " + std::to_string(sa.attr.max_wr) + " WRs");
  }

  std::random_device rd;
  for (unsigned i = 0; i < o.qps; ++i) {
    ibv_qp_init_attr ia{};
    ia.send_cq = s.cq->get();
    ia.recv_cq = s.cq->get();
    ia.srq = s.srq.get();
    ia.qp_type = IBV_QPT_RC;
    ia.sq_sig_all = 1;
    // --mr-remote-write: one WRITE pass beside the window of sends
    ia.cap.max_send_wr = o.role == Role::Send ? o.window + (o.mr_remote_write_s > 0) : 1;
    ia.cap.max_recv_wr = (o.role == Role::Recv && !o.srq) ? o.window : 1;
    ia.cap.max_send_sge = 1;
    ia.cap.max_recv_sge = 1;
    QpPtr qp(ibv_create_qp(s.pd.get(), &ia));
    if (!qp) throw_errno("ibv_create_qp " + std::to_string(i + 1) + " of " + std::to_string(o.qps));
    qp_to_init(qp.get(), s.settings);
    s.qps.push_back(std::move(qp));
    s.psns.push_back(rd() & 0xffffff);
  }
  return s;
}

void connect_session(Session& s, const Options& o) {
  UniqueFd peer = o.connect_host.empty() ? accept_peer(o.bind_address, o.port, o.setup_timeout_s)
                                         : connect_peer(o.connect_host, o.port, o.setup_timeout_s);
  send_line(peer.get(), describe(s, o).dump());
  nlohmann::json remote;
  try {
    remote = nlohmann::json::parse(receive_line(peer.get(), o.setup_timeout_s));
    check_peer(remote, o);
  } catch (const nlohmann::json::exception& e) {
    throw Error(std::string("malformed set-up message from the peer: ") + e.what());
  }

  LocalInfo their;
  their.lid = remote.at("lid").get<uint16_t>();
  their.gid = gid_from_string(remote.at("gid").get<std::string>());
  auto their_mtu = static_cast<ibv_mtu>(remote.at("mtu").get<int>());
  ibv_mtu mtu = std::min(s.local.mtu, their_mtu);
  if (o.role == Role::Send && o.mr_remote_write_s > 0) {
    s.remote_mr_addr = remote.at("mr").at("addr").get<uint64_t>();
    s.remote_mr_rkey = remote.at("mr").at("rkey").get<uint32_t>();
  }
  for (size_t i = 0; i < s.qps.size(); ++i) {
    QpEndpoint ep{remote["qp"][i][0].get<uint32_t>(), remote["qp"][i][1].get<uint32_t>()};
    qp_to_rtr(s.qps[i].get(), s.settings, their, mtu, ep);
    qp_to_rts(s.qps[i].get(), s.settings, s.psns[i]);
  }

  send_line(peer.get(), R"({"ready":true})");
  auto ready = receive_line(peer.get(), o.setup_timeout_s);
  if (ready != R"({"ready":true})") throw Error("unexpected set-up message from the peer: " + ready);
}

}  // namespace crx::verbs_seq
