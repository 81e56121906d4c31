#include "migrate/report.hpp"

#include <sys/resource.h>
#include <unistd.h>

#include <cstdio>
#include <nlohmann/json.hpp>

#include "common/error.hpp"
#include "migrate/inventory.hpp"
#include "migrate/precopy.hpp"

namespace crx::migrate {

std::optional<VerbsReport> VerbsReport::read(const std::string& dir) {
  VerbsReport v;
  v.dump = rdma::read_verbs_dump_stats(dir);
  v.restore = rdma::read_verbs_restore_stats(dir);
  v.resume = rdma::read_verbs_resume_stats(dir);
  if (!v.dump && !v.restore && !v.resume) return std::nullopt;
  return v;
}

std::map<std::string, uint64_t> VerbsReport::objects() const {
  if (restore && !restore->objects.empty()) return restore->objects;
  if (dump) return dump->objects;
  return {};
}

double VerbsReport::resume_ms() const {
  double ms = restore ? restore->resume_ms : 0;
  if (resume) ms += resume->resume_ms;
  return ms;
}

namespace {

// "2 qp, 3 mr, 2 cq, 1 pd" in restore order of importance.
std::string objects_text(const std::map<std::string, uint64_t>& objects) {
  static const char* kOrder[] = {"qp", "mr", "cq", "srq", "pd"};
  std::string out;
  auto add = [&](const std::string& k, uint64_t n) {
    out += (out.empty() ? "" : ", ") + std::to_string(n) + " " + k;
  };
  for (const char* k : kOrder) {
    auto it = objects.find(k);
    if (it != objects.end()) add(k, it->second);
  }
  for (const auto& [k, n] : objects) {
    bool known = false;
    for (const char* o : kOrder) known = known || k == o;
    if (!known) add(k, n);
  }
  return out.empty() ? "none" : out;
}

std::string verbs_text(const VerbsReport& v) {
  std::string out = "  verbs objects: " + objects_text(v.objects());
  if (v.dump) {
    out += " in " + std::to_string(v.dump->contexts) + " context" +
           (v.dump->contexts == 1 ? "" : "s") + ", MRs " + human_bytes(v.dump->mr_bytes);
    if (v.dump->image_bytes) out += ", image " + human_bytes(v.dump->image_bytes);
    if (v.dump->receives_in_progress)
      out += ", " + std::to_string(v.dump->receives_in_progress) + " receive" +
             (v.dump->receives_in_progress == 1 ? "" : "s") + " in progress";
    if (v.dump->responder_resources)
      out += ", " + std::to_string(v.dump->responder_resources) + " READ" +
             (v.dump->responder_resources == 1 ? "" : "s") + "/atomic" +
             (v.dump->responder_resources == 1 ? "" : "s") + " held for retries";
    if (v.dump->completions)
      out += ", " + std::to_string(v.dump->completions) + " completion" +
             (v.dump->completions == 1 ? "" : "s") + " queued";
  }
  out += "\n";
  char buf[256];
  std::string times;
  if (v.dump) {
    std::snprintf(buf, sizeof buf, "dump %.1f ms", v.dump->dump_ms);
    times += buf;
  }
  if (v.restore) {
    std::snprintf(buf, sizeof buf, "%splugin init %.1f ms%s, recreate %.1f ms, pin MRs %.1f ms",
                  times.empty() ? "" : ", ", v.restore->init_ms,
                  v.restore->providers_preloaded ? " (providers loaded ahead)" : "",
                  v.restore->recreate_ms, v.restore->pin_ms);
    times += buf;
  }
  if (v.restore || v.resume) {
    std::snprintf(buf, sizeof buf, "%sresume %.1f ms%s", times.empty() ? "" : ", ", v.resume_ms(),
                  v.resume ? " (after the commit)" : "");
    times += buf;
  }
  if (!times.empty()) out += "  verbs time: " + times + "\n";
  if (v.restore && !v.restore->ok)
    out += "  verbs restore failed: " + (v.restore->error.empty() ? "no reason given" : v.restore->error) + "\n";
  return out;
}

nlohmann::json verbs_json(const VerbsReport& v) {
  nlohmann::json j;
  j["objects"] = v.objects();
  if (v.dump) {
    j["contexts"] = v.dump->contexts;
    j["mr_bytes"] = v.dump->mr_bytes;
    j["receives_in_progress"] = v.dump->receives_in_progress;
    j["responder_resources"] = v.dump->responder_resources;
    j["completions_queued"] = v.dump->completions;
    j["image_bytes"] = v.dump->image_bytes;
    j["dump_ms"] = v.dump->dump_ms;
  }
  if (v.restore) {
    j["restore_ok"] = v.restore->ok;
    if (!v.restore->error.empty()) j["restore_error"] = v.restore->error;
    j["plugin_init_ms"] = v.restore->init_ms;
    j["providers_preloaded"] = v.restore->providers_preloaded;
    j["recreate_ms"] = v.restore->recreate_ms;
    if (!v.restore->recreate_parts_ms.empty()) j["recreate_parts_ms"] = v.restore->recreate_parts_ms;
    j["pin_ms"] = v.restore->pin_ms;
  }
  if (v.restore || v.resume) j["resume_ms"] = v.resume_ms();
  if (v.resume) j["resumed_qps_after_commit"] = v.resume->qps;
  return j;
}

}  // namespace

uint64_t MigrationReport::page_bytes() const {
  uint64_t n = 0;
  for (const auto& r : rounds) n += r.page_bytes;
  if (lazy) n += lazy->pages * kLazyPageSize;
  return n;
}

uint64_t MigrationReport::image_bytes() const {
  uint64_t n = 0;
  for (const auto& r : rounds) n += r.image_bytes;
  return n;
}

const RoundReport* MigrationReport::last_pre_copy_round() const {
  const RoundReport* last = nullptr;
  for (const auto& r : rounds)
    if (!r.final) last = &r;
  return last;
}

const RoundReport* MigrationReport::final_round() const {
  for (const auto& r : rounds)
    if (r.final) return &r;
  return nullptr;
}

namespace {

// ", 16.0 MiB/s; dirty 1.2 MiB/s, link 16.0 MiB/s; predicted final
// 310.0 KiB, downtime 3.25 s" as far as the round knows.
std::string round_rates_text(const RoundReport& r) {
  std::string out;
  char buf[160];
  if (r.throughput > 0) out += ", " + human_rate(r.throughput);
  std::string more;
  if (r.dirty_rate > 0) more += "dirty " + human_rate(r.dirty_rate);
  if (!r.final && r.bandwidth > 0) more += (more.empty() ? "" : ", ") + ("link " + human_rate(r.bandwidth));
  if (r.predicted_final_bytes && r.predicted_downtime) {
    std::snprintf(buf, sizeof buf, "predicted final %s, downtime %.2f s",
                  human_bytes(*r.predicted_final_bytes).c_str(), *r.predicted_downtime);
    more += (more.empty() ? "" : ", ") + std::string(buf);
  }
  if (!more.empty()) out += "; " + more;
  return out;
}

// "lazy phase: 12.345 s, memory 256.0 MiB (65536 pages): 1.2 MiB on
// demand (300 pages, 310 faults), 254.8 MiB pushed"
std::string lazy_text(const LazyStats& l) {
  char buf[320];
  std::snprintf(buf, sizeof buf,
                "  lazy phase: %.3f s, memory %s (%llu pages): %s on demand (%llu pages, %llu "
                "faults), %s pushed; page channel %s\n",
                l.seconds, human_bytes(l.pages * kLazyPageSize).c_str(),
                static_cast<unsigned long long>(l.pages),
                human_bytes(l.on_demand_pages * kLazyPageSize).c_str(),
                static_cast<unsigned long long>(l.on_demand_pages),
                static_cast<unsigned long long>(l.faults),
                human_bytes(l.pushed_pages() * kLazyPageSize).c_str(), human_bytes(l.bytes).c_str());
  return buf;
}

// "memory filled after the resume: 1.234 s, 256.0 MiB (65536 pages), 1.2
// MiB of it on demand (300 pages, 310 faults)"
std::string fill_text(const LazyStats& l) {
  char buf[320];
  std::snprintf(buf, sizeof buf,
                "  memory filled after the resume: %.3f s, %s (%llu pages), %s of it on demand "
                "(%llu pages, %llu faults)\n",
                l.seconds, human_bytes(l.pages * kLazyPageSize).c_str(),
                static_cast<unsigned long long>(l.pages),
                human_bytes(l.on_demand_pages * kLazyPageSize).c_str(),
                static_cast<unsigned long long>(l.on_demand_pages),
                static_cast<unsigned long long>(l.faults));
  return buf;
}

nlohmann::json lazy_json(const LazyStats& l) {
  return {{"seconds", l.seconds},
          {"bytes", l.bytes},
          {"pages", l.pages},
          {"on_demand_pages", l.on_demand_pages},
          {"pushed_pages", l.pushed_pages()},
          {"on_demand_bytes", l.on_demand_pages * kLazyPageSize},
          {"pushed_bytes", l.pushed_pages() * kLazyPageSize},
          {"faults", l.faults}};
}

}  // namespace

std::string MigrationReport::to_text() const {
  std::string out;
  char buf[256];
  std::snprintf(buf, sizeof buf, "%s %s %s: %s\n", role.c_str(), id.c_str(),
                role == "sender" ? ("-> " + peer).c_str() : ("<- " + peer).c_str(),
                outcome.c_str());
  out += buf;
  if (!error.empty()) out += "  reason: " + error + "\n";
  for (const auto& p : phases) {
    std::snprintf(buf, sizeof buf, "  %-14s %8.3f s   cpu %.2f s crx, %.2f s children\n",
                  p.name.c_str(), p.seconds, p.cpu_seconds, p.child_cpu_seconds);
    out += buf;
  }
  for (const auto& r : rounds) {
    std::snprintf(buf, sizeof buf, "  round %d%s: memory %s, images %s, %.3f s", r.round,
                  r.final ? " (final dump)" : " (pre-copy)", human_bytes(r.page_bytes).c_str(),
                  human_bytes(r.image_bytes).c_str(), r.seconds);
    out += buf + round_rates_text(r);
    if (r.unchanged_pages > 0)
      out += "; " + human_bytes(r.unchanged_pages * 4096) + " unchanged, not sent again";
    if (r.zero_pages > 0)
      out += "; " + human_bytes(r.zero_pages * 4096) + " of zero pages sent as their count";
    if (r.compressed_bytes > 0)
      out += "; " + human_bytes(r.compressed_bytes) + " compressed to " + human_bytes(r.compressed_to);
    if (r.filter_cpu_seconds > 0) {
      std::snprintf(buf, sizeof buf, "; page filter CPU %.2f s", r.filter_cpu_seconds);
      out += buf;
    }
    if (r.parent_pages_checked > 0)
      out += "; " + human_bytes(r.parent_pages_checked * 4096) + " CRIU took from the parent checked, " +
             human_bytes(r.parent_pages_changed * 4096) + " of it changed and sent";
    if (r.device_written_pages)
      out += " (the pages the MRs' write logs name, " +
             human_bytes(*r.device_written_pages * 4096) + " the device wrote)";
    if (r.netns_moved_empty) out += "; network namespace as a new one, moved empty";
    if (r.net_sysctls_carried > 0)
      out += "; " + std::to_string(r.net_sysctls_carried) + " network sysctls carried by crx";
    if (r.netns_read_ahead) out += "; network namespace read before the freeze";
    if (r.net_sysctls_late) out += "; its sysctls read after the images were sent";
    if (r.uts_ipc_made_anew) out += "; UTS and IPC namespaces made anew, their content carried by crx";
    if (r.build_ids_checked_ahead) out += "; libraries' build-ids checked before the freeze";
    if (r.cgroup_left_to_destination) out += "; cgroup left to the destination's, not walked";
    if (r.dump_request_ahead) out += "; CRIU's request sent before the freeze";
    if (r.pre_dump_read) out += "; pages read while the container ran";
    if (r.criu) {
      // A dump writes the pages while the tasks are frozen (CRIU times the
      // write inside the memory dump); a pre-dump after it lets them go.
      std::snprintf(buf, sizeof buf,
                    r.final ? "; CRIU: frozen %.3f s, memory dump %.3f s (writing %.3f s of it)"
                            : "; CRIU: frozen %.3f s, memory dump %.3f s, then writing %.3f s",
                    r.criu->frozen_seconds, r.criu->memdump_seconds, r.criu->memwrite_seconds);
      out += buf;
    }
    out += "\n";
  }
  if (!pre_copy_stop.empty()) {
    out += "  pre-copy stopped" + (pre_copy_mode == "auto" ? std::string(" (auto)") : "") + ": " +
           pre_copy_stop + "\n";
  }
  const RoundReport* pre = last_pre_copy_round();
  const RoundReport* fin = final_round();
  if (pre && pre->predicted_final_bytes && pre->predicted_downtime) {
    std::snprintf(buf, sizeof buf, "  prediction: final round %s, downtime %.2f s",
                  human_bytes(*pre->predicted_final_bytes).c_str(), *pre->predicted_downtime);
    out += buf;
    if (fin && outcome == "migrated") {
      std::snprintf(buf, sizeof buf, "; actual %s, %.2f s", human_bytes(fin->page_bytes).c_str(),
                    downtime_seconds);
      out += buf;
    }
    out += "\n";
  }
  if (lazy) out += lazy_text(*lazy);
  if (fill) out += fill_text(*fill);
  if (criu_restore) {
    std::snprintf(buf, sizeof buf, "  CRIU's restore: %.3f s, forking %.3f s, %llu pages restored\n",
                  criu_restore->restore_seconds, criu_restore->forking_seconds,
                  static_cast<unsigned long long>(criu_restore->pages_restored));
    out += buf;
  }
  if (prepare_seconds > 0) {
    std::snprintf(buf, sizeof buf,
                  "  restore prepared on the destination before the freeze: %.3f s\n",
                  prepare_seconds);
    out += buf;
  }
  if (security == "tls+ktls") out += "  security: TLS 1.3 (shared key), pages in kernel TLS\n";
  if (security == "tls") out += "  security: TLS 1.3 (shared key)\n";
  if (security == "tls-cert+ktls")
    out += "  security: TLS 1.3 (certificates), pages in kernel TLS\n";
  if (security == "tls-cert") out += "  security: TLS 1.3 (certificates)\n";
  if (security == "plaintext") out += "  security: none, clear text (--insecure-plaintext)\n";
  if (!tls_cipher.empty()) out += "  cipher: " + tls_cipher + "\n";
  std::snprintf(buf, sizeof buf,
                "  moved: memory %s, images %s, rootfs %s, control link %s\n"
                "  downtime %.3f s, total %.3f s\n",
                human_bytes(page_bytes()).c_str(), human_bytes(image_bytes()).c_str(),
                human_bytes(rootfs_bytes).c_str(), human_bytes(wire_bytes).c_str(),
                downtime_seconds, total_seconds);
  out += buf;
  if (inventory.is_object()) {
    try {
      out += "  moves: " + Inventory::from_json(inventory).summary() + "\n";
    } catch (const std::exception&) {
    }
  }
  if (paused) out += "  paused: moved paused, stays paused (crx resume " + id + ")\n";
  if (!left_out.empty()) {
    std::string l;
    for (const auto& p : left_out) l += (l.empty() ? "" : ", ") + p;
    out += "  left behind (--kill-exec), killed with the source: " + l + "\n";
  }
  if (verbs) out += verbs_text(*verbs);
  return out;
}

std::string MigrationReport::to_json() const {
  nlohmann::json j;
  j["role"] = role;
  j["id"] = id;
  j["peer"] = peer;
  j["outcome"] = outcome;
  if (!error.empty()) j["error"] = error;
  j["phases"] = nlohmann::json::array();
  for (const auto& p : phases)
    j["phases"].push_back({{"name", p.name},
                           {"seconds", p.seconds},
                           {"cpu_seconds", p.cpu_seconds},
                           {"child_cpu_seconds", p.child_cpu_seconds}});
  j["rounds"] = nlohmann::json::array();
  for (const auto& r : rounds) {
    nlohmann::json jr = {{"round", r.round},
                         {"final", r.final},
                         {"page_bytes", r.page_bytes},
                         {"image_bytes", r.image_bytes},
                         {"seconds", r.seconds}};
    if (r.unchanged_pages > 0) jr["unchanged_page_bytes"] = r.unchanged_pages * 4096;
    if (r.zero_pages > 0) jr["zero_page_bytes"] = r.zero_pages * 4096;
    if (r.compressed_bytes > 0) {
      jr["compressed_bytes"] = r.compressed_bytes;
      jr["compressed_to_bytes"] = r.compressed_to;
    }
    if (r.filter_cpu_seconds > 0) jr["filter_cpu_seconds"] = r.filter_cpu_seconds;
    if (r.parent_pages_checked > 0) {
      jr["parent_checked_bytes"] = r.parent_pages_checked * 4096;
      jr["parent_changed_bytes"] = r.parent_pages_changed * 4096;
    }
    if (r.device_written_pages) jr["device_written_bytes"] = *r.device_written_pages * 4096;
    if (r.netns_moved_empty) jr["network_namespace_moved_empty"] = true;
    if (r.net_sysctls_carried > 0) jr["network_sysctls_carried"] = r.net_sysctls_carried;
    if (r.netns_read_ahead) jr["network_namespace_read_before_freeze"] = true;
    if (r.net_sysctls_late) jr["network_sysctls_read_after_images"] = true;
    if (r.uts_ipc_made_anew) jr["uts_ipc_namespaces_made_anew"] = true;
    if (r.build_ids_checked_ahead) jr["build_ids_checked_ahead"] = true;
    if (r.cgroup_left_to_destination) jr["cgroup_left_to_destination"] = true;
    if (r.dump_request_ahead) jr["dump_request_ahead"] = true;
    if (r.pre_dump_read) jr["pre_dump_read"] = true;
    if (r.throughput > 0) jr["bytes_per_second"] = r.throughput;
    if (r.bandwidth > 0) jr["bandwidth_bytes_per_second"] = r.bandwidth;
    if (r.dirty_rate > 0) jr["dirty_bytes_per_second"] = r.dirty_rate;
    if (r.predicted_final_bytes) jr["predicted_final_bytes"] = *r.predicted_final_bytes;
    if (r.predicted_downtime) jr["predicted_downtime_seconds"] = *r.predicted_downtime;
    if (r.criu) {
      jr["criu"] = {{"freezing_seconds", r.criu->freezing_seconds},
                    {"frozen_seconds", r.criu->frozen_seconds},
                    {"memdump_seconds", r.criu->memdump_seconds},
                    {"memwrite_seconds", r.criu->memwrite_seconds},
                    {"pages_scanned", r.criu->pages_scanned},
                    {"pages_skipped_parent", r.criu->pages_skipped_parent},
                    {"pages_written", r.criu->pages_written}};
    }
    j["rounds"].push_back(jr);
  }
  if (!pre_copy_stop.empty()) j["pre_copy_stop"] = pre_copy_stop;
  if (!pre_copy_mode.empty()) {
    nlohmann::json p = {{"mode", pre_copy_mode}, {"stop", pre_copy_stop}};
    int n = 0;
    for (const auto& r : rounds) n += r.final ? 0 : 1;
    p["rounds"] = n;
    if (fixed_downtime_estimate > 0) p["fixed_downtime_seconds"] = fixed_downtime_estimate;
    const RoundReport* pre = last_pre_copy_round();
    const RoundReport* fin = final_round();
    if (pre && pre->predicted_final_bytes) p["predicted_final_bytes"] = *pre->predicted_final_bytes;
    if (pre && pre->predicted_downtime) p["predicted_downtime_seconds"] = *pre->predicted_downtime;
    if (fin) p["actual_final_bytes"] = fin->page_bytes;
    if (fin && outcome == "migrated") p["actual_downtime_seconds"] = downtime_seconds;
    j["pre_copy"] = p;
  }
  if (!security.empty()) j["security"] = security;
  if (!tls_cipher.empty()) j["tls_cipher"] = tls_cipher;
  j["bytes"] = {{"pages", page_bytes()},
                {"images", image_bytes()},
                {"rootfs", rootfs_bytes},
                {"control_link", wire_bytes}};
  j["downtime_seconds"] = downtime_seconds;
  j["total_seconds"] = total_seconds;
  if (prepare_seconds > 0) j["prepare_seconds"] = prepare_seconds;
  if (inventory.is_object()) j["inventory"] = inventory;
  if (paused) j["paused"] = true;
  if (!left_out.empty()) j["left_out"] = left_out;
  if (verbs) j["verbs"] = verbs_json(*verbs);
  if (criu_restore) j["criu_restore"] = criu_restore_json(*criu_restore);
  if (lazy) j["lazy"] = lazy_json(*lazy);
  if (fill) j["fill_after_resume"] = lazy_json(*fill);
  return j.dump();
}

nlohmann::json criu_restore_json(const checkpoint::CriuRestoreStats& s) {
  return {{"restore_seconds", s.restore_seconds},
          {"forking_seconds", s.forking_seconds},
          {"pages_restored", s.pages_restored}};
}

checkpoint::CriuRestoreStats criu_restore_from_json(const nlohmann::json& j) {
  auto number = [&](const char* key) {
    auto it = j.find(key);
    if (it == j.end() || !it->is_number() || it->get<double>() < 0)
      throw Error(std::string("CRIU's restore statistics: \"") + key + "\" is not a number",
                  Cause::Invalid);
    return it->get<double>();
  };
  checkpoint::CriuRestoreStats s;
  s.restore_seconds = number("restore_seconds");
  s.forking_seconds = number("forking_seconds");
  s.pages_restored = static_cast<uint64_t>(number("pages_restored"));
  return s;
}

namespace {
double cpu_seconds_of(int who) {
  struct rusage u{};
  if (::getrusage(who, &u) != 0) return 0;  // cannot fail for these two
  auto s = [](const timeval& t) { return double(t.tv_sec) + double(t.tv_usec) / 1e6; };
  return s(u.ru_utime) + s(u.ru_stime);
}
}  // namespace

void PhaseClock::begin(const std::string& name) {
  end();
  current_ = name;
  phase_start_ = Clock::now();
  phase_cpu_start_ = cpu_seconds_of(RUSAGE_SELF);
  phase_child_cpu_start_ = cpu_seconds_of(RUSAGE_CHILDREN);
  if (progress_) progress_(name);
}

void PhaseClock::end() {
  if (current_.empty()) return;
  double s = std::chrono::duration<double>(Clock::now() - phase_start_).count();
  report_.phases.push_back(PhaseTime{current_, s, cpu_seconds_of(RUSAGE_SELF) - phase_cpu_start_,
                                     cpu_seconds_of(RUSAGE_CHILDREN) - phase_child_cpu_start_});
  current_.clear();
}

double PhaseClock::since_start() const {
  return std::chrono::duration<double>(Clock::now() - start_).count();
}

std::function<void(const std::string&)> terminal_progress(const std::string& prefix) {
  bool tty = ::isatty(STDERR_FILENO);
  auto start = std::chrono::steady_clock::now();
  return [tty, prefix, start](const std::string& phase) {
    double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (tty) {
      std::fprintf(stderr, "\r\033[K%s [%6.2f s] %s", prefix.c_str(), t, phase.c_str());
      if (phase == "done") std::fprintf(stderr, "\n");
    } else {
      std::fprintf(stderr, "%s [%6.2f s] %s\n", prefix.c_str(), t, phase.c_str());
    }
    std::fflush(stderr);
  };
}

}  // namespace crx::migrate
