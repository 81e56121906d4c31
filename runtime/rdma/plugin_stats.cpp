#include "rdma/plugin_stats.hpp"

#include <nlohmann/json.hpp>

#include "common/fs.hpp"
#include "rdma/rdma_error.hpp"

namespace crx::rdma {
namespace {

using nlohmann::json;

std::optional<json> object(const std::string& text) {
  json j = json::parse(text, nullptr, false);
  if (j.is_discarded() || !j.is_object()) return std::nullopt;
  return j;
}

double number(const json& j, const char* key) {
  auto it = j.find(key);
  return it != j.end() && it->is_number() ? it->get<double>() : 0.0;
}

std::map<std::string, uint64_t> objects(const json& j) {
  std::map<std::string, uint64_t> out;
  auto it = j.find("objects");
  if (it == j.end() || !it->is_object()) return out;
  for (const auto& [k, v] : it->items()) {
    if (v.is_number_unsigned()) out[k] = v.get<uint64_t>();
  }
  return out;
}

std::string one_line(std::string s) {
  for (char& c : s)
    if (c == '\n' || c == '\r') c = ' ';
  while (!s.empty() && s.back() == ' ') s.pop_back();
  return s;
}

}  // namespace

std::optional<VerbsDumpStats> parse_verbs_dump_stats(const std::string& text) {
  auto j = object(text);
  if (!j) return std::nullopt;
  VerbsDumpStats s;
  s.contexts = static_cast<uint64_t>(number(*j, "contexts"));
  s.objects = objects(*j);
  s.mr_bytes = static_cast<uint64_t>(number(*j, "mr_bytes"));
  s.receives_in_progress = static_cast<uint64_t>(number(*j, "receives_in_progress"));
  s.responder_resources = static_cast<uint64_t>(number(*j, "responder_resources"));
  s.completions = static_cast<uint64_t>(number(*j, "completions"));
  s.image_bytes = static_cast<uint64_t>(number(*j, "image_bytes"));
  s.dump_ms = number(*j, "dump_ms");
  return s;
}

std::optional<VerbsRestoreStats> parse_verbs_restore_stats(const std::string& text) {
  auto j = object(text);
  if (!j) return std::nullopt;
  VerbsRestoreStats s;
  auto ok = j->find("ok");
  s.ok = ok != j->end() && ok->is_boolean() && ok->get<bool>();
  auto err = j->find("error");
  if (err != j->end() && err->is_string()) s.error = one_line(err->get<std::string>());
  s.recreate_ms = number(*j, "recreate_ms");
  s.pin_ms = number(*j, "pin_ms");
  s.resume_ms = number(*j, "resume_ms");
  s.objects = objects(*j);
  s.init_ms = number(*j, "init_ms");
  auto pre = j->find("providers_preloaded");
  s.providers_preloaded = pre != j->end() && pre->is_boolean() && pre->get<bool>();
  auto parts = j->find("recreate_parts_ms");
  if (parts != j->end() && parts->is_object())
    for (auto& [k, v] : parts->items())
      if (v.is_number()) s.recreate_parts_ms[k] = v.get<double>();
  return s;
}

std::optional<VerbsResumeStats> parse_verbs_resume_stats(const std::string& text) {
  auto j = object(text);
  if (!j) return std::nullopt;
  return VerbsResumeStats{static_cast<uint64_t>(number(*j, "qps")), number(*j, "resume_ms")};
}

std::optional<VerbsDumpStats> read_verbs_dump_stats(const std::string& dir) {
  auto text = read_file_if_present(dir + "/" + kVerbsDumpFile);
  return text ? parse_verbs_dump_stats(*text) : std::nullopt;
}

bool verbs_dumped(const std::string& dir) { return path_exists(dir + "/" + kVerbsDumpFile); }

std::optional<VerbsRestoreStats> read_verbs_restore_stats(const std::string& dir) {
  auto text = read_file_if_present(dir + "/" + kVerbsRestoreFile);
  if (!text) return std::nullopt;
  if (auto s = parse_verbs_restore_stats(*text)) return s;
  VerbsRestoreStats bad;
  bad.error = std::string(kVerbsRestoreFile) + " is not a JSON object";
  return bad;
}

std::optional<VerbsResumeStats> read_verbs_resume_stats(const std::string& dir) {
  auto text = read_file_if_present(dir + "/" + kVerbsResumeFile);
  return text ? parse_verbs_resume_stats(*text) : std::nullopt;
}

void write_verbs_resume_stats(const std::string& dir, const VerbsResumeStats& s) {
  write_file(dir + "/" + kVerbsResumeFile,
             json{{"qps", s.qps}, {"resume_ms", s.resume_ms}}.dump(), 0600);
}

void check_verbs_restore(const std::string& dir) {
  auto s = read_verbs_restore_stats(dir);
  if (!s || s->ok) return;
  throw RdmaError(RdmaCause::PluginRestore,
                  "restoring the verbs objects failed: " +
                      (s->error.empty() ? std::string("the CRIU plugin gave no reason") : s->error));
}

}  // namespace crx::rdma
