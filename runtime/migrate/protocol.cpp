#include "migrate/protocol.hpp"

#include <type_traits>

#include "common/error.hpp"
#include "migrate/inventory.hpp"

namespace crx::migrate {
namespace {

using nlohmann::json;

json parse_object(const std::string& text, const char* what) {
  json j = json::parse(text, nullptr, false);
  if (!j.is_object()) throw Error(std::string("malformed ") + what + " frame: not a JSON object");
  return j;
}

template <typename T>
T req(const json& j, const char* what, const char* key) {
  auto it = j.find(key);
  if (it == j.end()) throw Error(std::string("malformed ") + what + " frame: no \"" + key + "\"");
  // get<integer>() of a float casts it, undefined out of the type's range
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    if (!it->is_number_integer())
      throw Error(std::string("malformed ") + what + " frame: \"" + key + "\" is not an integer");
  }
  try {
    return it->get<T>();
  } catch (const json::exception&) {
    throw Error(std::string("malformed ") + what + " frame: \"" + key + "\" has the wrong type");
  }
}

template <typename T>
T opt(const json& j, const char* what, const char* key, T dflt) {
  if (!j.contains(key)) return dflt;
  return req<T>(j, what, key);
}

}  // namespace

std::string to_json(const Manifest& m) {
  json flags = {{"tcp_established", m.flags.tcp_established},
                {"ext_unix_sk", m.flags.ext_unix_sk},
                {"shell_job", m.flags.shell_job},
                {"file_locks", m.flags.file_locks},
                {"manage_cgroups_mode", m.flags.manage_cgroups_mode}};
  json j{{"protocol", kProtocolVersion},
          {"id", m.id},
          {"bundle", m.bundle},
          {"config_sha256", m.config_sha256},
          {"config_json", m.config_json},
          {"send_rootfs", m.send_rootfs},
          {"pre_copy_rounds", m.pre_copy_rounds},
          {"criu_version", m.criu_version},
          {"kernel", m.kernel},
          {"flags", flags}};
  if (m.rdma) j["rdma"] = rdma::to_json(*m.rdma);
  if (m.inventory) j["inventory"] = *m.inventory;
  if (m.lazy) j["lazy"] = true;
  if (m.fill_after_resume) j["fill_after_resume"] = true;
  if (m.elf_files) j["elf_files"] = elf_files_to_json(*m.elf_files);
  return j.dump();
}

Manifest parse_manifest(const std::string& text) {
  const char* w = "manifest";
  json j = parse_object(text, w);
  int proto = req<int>(j, w, "protocol");
  if (proto != kProtocolVersion) {
    throw Error("sender speaks migration protocol " + std::to_string(proto) + ", this crx speaks " +
                std::to_string(kProtocolVersion));
  }
  Manifest m;
  m.id = req<std::string>(j, w, "id");
  m.bundle = req<std::string>(j, w, "bundle");
  m.config_sha256 = req<std::string>(j, w, "config_sha256");
  m.config_json = opt<std::string>(j, w, "config_json", "");
  m.send_rootfs = opt<bool>(j, w, "send_rootfs", false);
  m.pre_copy_rounds = opt<int>(j, w, "pre_copy_rounds", 0);
  m.criu_version = opt<std::string>(j, w, "criu_version", "");
  m.kernel = opt<std::string>(j, w, "kernel", "");
  if (j.contains("flags")) {
    json f = req<json>(j, w, "flags");
    if (!f.is_object()) throw Error("malformed manifest frame: \"flags\" is not an object");
    m.flags.tcp_established = opt<bool>(f, w, "tcp_established", false);
    m.flags.ext_unix_sk = opt<bool>(f, w, "ext_unix_sk", false);
    m.flags.shell_job = opt<bool>(f, w, "shell_job", false);
    m.flags.file_locks = opt<bool>(f, w, "file_locks", false);
    m.flags.manage_cgroups_mode = opt<std::string>(f, w, "manage_cgroups_mode", "");
  }
  if (j.contains("rdma")) m.rdma = rdma::inventory_from_json(j["rdma"]);
  if (j.contains("inventory")) {
    Inventory::from_json(j["inventory"]);  // throws naming what is malformed
    m.inventory = j["inventory"];
  }
  m.lazy = opt<bool>(j, w, "lazy", false);
  m.fill_after_resume = opt<bool>(j, w, "fill_after_resume", false);
  if (j.contains("elf_files")) m.elf_files = elf_files_from_json(j["elf_files"]);
  if (m.id.empty()) throw Error("malformed manifest frame: empty container id");
  return m;
}

std::string to_json(const Acceptance& a) {
  json j{{"bundle", a.bundle}, {"need_rootfs", a.need_rootfs}};
  if (a.lazy) j["lazy"] = true;
  if (a.prepare_seconds > 0) j["prepare_seconds"] = a.prepare_seconds;
  if (a.final_round_ahead) j["final_round_ahead"] = true;
  if (a.zero_runs) j["zero_runs"] = true;
  if (a.lz4_frames) j["lz4_frames"] = true;
  if (a.uts_ipc_anew) j["uts_ipc_anew"] = true;
  if (a.late_state) j["late_state"] = true;
  if (a.elf_files_same) j["elf_files_same"] = true;
  if (!a.cgroup_path.empty()) j["cgroup_path"] = a.cgroup_path;
  return j.dump();
}

Acceptance parse_acceptance(const std::string& text) {
  const char* w = "accept";
  json j = parse_object(text, w);
  Acceptance a{req<std::string>(j, w, "bundle"), req<bool>(j, w, "need_rootfs"),
               opt<bool>(j, w, "lazy", false)};
  a.prepare_seconds = opt<double>(j, w, "prepare_seconds", 0.0);
  if (!(a.prepare_seconds >= 0))
    throw Error("malformed accept frame: \"prepare_seconds\" is negative", Cause::Invalid);
  a.final_round_ahead = opt<bool>(j, w, "final_round_ahead", false);
  a.zero_runs = opt<bool>(j, w, "zero_runs", false);
  a.lz4_frames = opt<bool>(j, w, "lz4_frames", false);
  a.uts_ipc_anew = opt<bool>(j, w, "uts_ipc_anew", false);
  a.late_state = opt<bool>(j, w, "late_state", false);
  a.elf_files_same = opt<bool>(j, w, "elf_files_same", false);
  a.cgroup_path = opt<std::string>(j, w, "cgroup_path", "");
  if (!a.cgroup_path.empty() && a.cgroup_path.front() != '/')
    throw Error("malformed accept frame: \"cgroup_path\" is not absolute", Cause::Invalid);
  return a;
}

std::string to_json(const RoundStart& r) {
  json j{{"round", r.round}, {"final", r.final}, {"parent", r.parent}};
  if (r.ahead) j["ahead"] = true;
  if (r.zero_runs) j["zero_runs"] = true;
  return j.dump();
}

RoundStart parse_round_start(const std::string& text) {
  const char* w = "round-start";
  json j = parse_object(text, w);
  RoundStart r{req<int>(j, w, "round"), req<bool>(j, w, "final"), req<std::string>(j, w, "parent")};
  if (r.round < 1 || r.round > 1000) throw Error("malformed round-start frame: round out of range");
  r.ahead = opt<bool>(j, w, "ahead", false);
  r.zero_runs = opt<bool>(j, w, "zero_runs", false);
  if (r.ahead && !r.final)
    throw Error("malformed round-start frame: only the final round opens ahead", Cause::Invalid);
  return r;
}

std::string to_json(const RoundDone& r) {
  return json{{"image_bytes", r.image_bytes}, {"criu_seconds", r.criu_seconds}}.dump();
}

RoundDone parse_round_done(const std::string& text) {
  const char* w = "round-done";
  json j = parse_object(text, w);
  return RoundDone{req<uint64_t>(j, w, "image_bytes"), opt<double>(j, w, "criu_seconds", 0)};
}

std::string to_json(const RoundAck& r) { return json{{"page_bytes", r.page_bytes}}.dump(); }

RoundAck parse_round_ack(const std::string& text) {
  json j = parse_object(text, "round-ack");
  return RoundAck{req<uint64_t>(j, "round-ack", "page_bytes")};
}

std::string to_json(const RestoreDone& r) {
  return json{{"restore_seconds", r.restore_seconds}, {"pid", r.pid}}.dump();
}

std::string to_json(const CommitAck& a) {
  json j = json::object();
  auto add = [&](const char* key, const std::string& text) {
    if (text.empty()) return;
    json v = json::parse(text, nullptr, false);
    if (v.is_object()) j[key] = std::move(v);
  };
  add("verbs_restore", a.verbs_restore);
  add("verbs_resume", a.verbs_resume);
  add("criu_restore", a.criu_restore);
  if (a.filling_after_resume) j["filling_after_resume"] = true;
  return j.dump();
}

CommitAck parse_commit_ack(const std::string& text) {
  CommitAck a;
  if (text.empty()) return a;
  json j = parse_object(text, "commit-ack");
  auto get = [&](const char* key) {
    auto it = j.find(key);
    if (it == j.end()) return std::string();
    if (!it->is_object()) throw Error(std::string("malformed commit-ack frame: \"") + key + "\" is not an object");
    return it->dump();
  };
  a.verbs_restore = get("verbs_restore");
  a.verbs_resume = get("verbs_resume");
  a.criu_restore = get("criu_restore");
  a.filling_after_resume = opt<bool>(j, "commit-ack", "filling_after_resume", false);
  return a;
}

std::string to_json(const LateState& s) {
  return json{{"net_sysctls", s.net_sysctls}}.dump();
}

LateState parse_late_state(const std::string& text) {
  const char* w = "late-state";
  json j = parse_object(text, w);
  LateState s;
  auto it = j.find("net_sysctls");
  if (it == j.end()) return s;
  if (!it->is_object())
    throw Error("malformed late-state frame: \"net_sysctls\" is not an object", Cause::Invalid);
  for (const auto& [path, value] : it->items()) {
    // A plain path below /proc/sys/net: nothing else may be written there.
    bool plain = path.starts_with("net/") && path.find("..") == std::string::npos &&
                 path.find("//") == std::string::npos && path.back() != '/';
    if (!plain)
      throw Error("malformed late-state frame: \"" + path + "\" is not a network sysctl",
                  Cause::Invalid);
    if (!value.is_string())
      throw Error("malformed late-state frame: the value of \"" + path + "\" is not a string",
                  Cause::Invalid);
    s.net_sysctls[path] = value.get<std::string>();
  }
  return s;
}

std::string to_json(const LazyStats& s) {
  return json{{"seconds", s.seconds},
              {"bytes", s.bytes},
              {"pages", s.pages},
              {"on_demand_pages", s.on_demand_pages},
              {"faults", s.faults}}
      .dump();
}

LazyStats parse_lazy_done(const std::string& text) {
  const char* w = "lazy-done";
  json j = parse_object(text, w);
  LazyStats s;
  s.seconds = req<double>(j, w, "seconds");
  s.bytes = req<uint64_t>(j, w, "bytes");
  s.pages = req<uint64_t>(j, w, "pages");
  s.on_demand_pages = opt<uint64_t>(j, w, "on_demand_pages", 0);
  s.faults = opt<uint64_t>(j, w, "faults", 0);
  return s;
}

RestoreDone parse_restore_done(const std::string& text) {
  const char* w = "restore-ok";
  json j = parse_object(text, w);
  return RestoreDone{opt<double>(j, w, "restore_seconds", 0), opt<int>(j, w, "pid", 0)};
}

}  // namespace crx::migrate
