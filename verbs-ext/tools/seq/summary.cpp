#include "seq/summary.hpp"

#include <nlohmann/json.hpp>

namespace crx::verbs_seq {

static const char* role_name(Role r) {
  return r == Role::Send ? "send" : r == Role::Recv ? "recv" : "idle";
}

static nlohmann::json common(const Summary& s) {
  return {{"role", role_name(s.role)},
          {"messages", s.messages},
          {"bytes", s.bytes},
          {"errors", s.errors},
          {"elapsed_s", s.elapsed_s}};
}

std::string summary_json(const Summary& s) {
  auto j = common(s);
  j["qps"] = s.qps;
  j["srq"] = s.srq;
  j["size"] = s.size;
  if (s.role == Role::Recv) {  // only the receiver can judge the sequence
    j["out_of_order"] = s.seq.out_of_order;
    j["duplicates"] = s.seq.duplicates;
    j["missing"] = s.seq.missing;
    j["unexpected"] = s.seq.beyond_total;
  }
  if (s.mr_size) j["mr_size"] = s.mr_size;
  if (s.mr_remote_passes) j["mr_remote_passes"] = s.mr_remote_passes;
  j["max_stall_s"] = s.max_stall_s;
  if (s.max_qp_stall_s >= 0) j["max_qp_stall_s"] = s.max_qp_stall_s;
  if (s.stalls_listed) {
    auto& list = j["stalls"] = nlohmann::json::array();
    for (const auto& st : s.stalls)
      list.push_back({{"end_unix_s", st.end_unix_s}, {"s", st.seconds}, {"raw_s", st.raw_seconds}});
  }
  if (s.elapsed_s > 0) j["msg_per_s"] = static_cast<double>(s.messages) / s.elapsed_s;
  if (s.interrupted) j["interrupted"] = true;
  if (!s.first_error.empty()) j["first_error"] = s.first_error;
  j["ok"] = s.ok();
  return j.dump();
}

std::string progress_json(const Summary& s, uint64_t outstanding) {
  auto j = common(s);
  j["outstanding"] = outstanding;
  return nlohmann::json{{"progress", j}}.dump();
}

}  // namespace crx::verbs_seq
