// The OCI Process object: used by config.json's .process and by
// `exec --process process.json`.
#include <sys/capability.h>
#include <sys/resource.h>

#include <set>

#include "spec/parse_parts.hpp"

namespace crx::spec {
namespace detail {
namespace {

User parse_user(const Field& f) {
  User u;
  if (auto v = f.member("uid")) u.uid = v->as<uint32_t>();
  if (auto v = f.member("gid")) u.gid = v->as<uint32_t>();
  if (auto v = f.member("umask")) {
    u.umask = v->as<uint32_t>();
    if (*u.umask > 0777) v->fail("umask " + std::to_string(*u.umask) + " is above 0777");
  }
  if (auto v = f.member("additionalGids"))
    v->for_each_element([&](const Field& g) { u.additional_gids.push_back(g.as<uint32_t>()); });
  return u;
}

int capability_number(const Field& f) {
  std::string name = f.as_string();
  cap_value_t value = 0;
  // libcap also takes lower case and bare numbers; runc only takes CAP_NAME.
  if (name.rfind("CAP_", 0) != 0 || cap_from_name(name.c_str(), &value) != 0)
    f.fail("unknown capability \"" + name + "\"");
  return static_cast<int>(value);
}

std::vector<int> capability_set(const Field& caps, std::string_view key) {
  std::vector<int> out;
  if (auto set = caps.member(key))
    set->for_each_element([&](const Field& c) { out.push_back(capability_number(c)); });
  return out;
}

Capabilities parse_capabilities(const Field& f) {
  f.expect_object();
  Capabilities c;
  c.bounding = capability_set(f, "bounding");
  c.effective = capability_set(f, "effective");
  c.inheritable = capability_set(f, "inheritable");
  c.permitted = capability_set(f, "permitted");
  c.ambient = capability_set(f, "ambient");
  return c;
}

struct RlimitName {
  const char* name;
  int resource;
};
constexpr RlimitName kRlimits[] = {
    {"RLIMIT_AS", RLIMIT_AS},           {"RLIMIT_CORE", RLIMIT_CORE},
    {"RLIMIT_CPU", RLIMIT_CPU},         {"RLIMIT_DATA", RLIMIT_DATA},
    {"RLIMIT_FSIZE", RLIMIT_FSIZE},     {"RLIMIT_LOCKS", RLIMIT_LOCKS},
    {"RLIMIT_MEMLOCK", RLIMIT_MEMLOCK}, {"RLIMIT_MSGQUEUE", RLIMIT_MSGQUEUE},
    {"RLIMIT_NICE", RLIMIT_NICE},       {"RLIMIT_NOFILE", RLIMIT_NOFILE},
    {"RLIMIT_NPROC", RLIMIT_NPROC},     {"RLIMIT_RSS", RLIMIT_RSS},
    {"RLIMIT_RTPRIO", RLIMIT_RTPRIO},   {"RLIMIT_RTTIME", RLIMIT_RTTIME},
    {"RLIMIT_SIGPENDING", RLIMIT_SIGPENDING}, {"RLIMIT_STACK", RLIMIT_STACK},
};

Rlimit parse_rlimit(const Field& f) {
  Rlimit r;
  auto type = f.required("type");
  r.type = type.as_string();
  bool known = false;
  for (const auto& entry : kRlimits)
    if (r.type == entry.name) {
      r.resource = entry.resource;
      known = true;
    }
  if (!known) type.fail("unknown rlimit type \"" + r.type + "\"");
  auto soft = f.required("soft");
  auto hard = f.required("hard");
  r.soft = soft.as_uint64();
  r.hard = hard.as_uint64();
  if (r.soft > r.hard)
    soft.fail("soft limit " + std::to_string(r.soft) + " is above the hard limit " +
              std::to_string(r.hard));
  return r;
}

void check_env(const Field& f, const std::string& entry) {
  auto eq = entry.find('=');
  if (eq == std::string::npos) f.fail("invalid environment variable \"" + entry + "\": missing '='");
  if (eq == 0) f.fail("invalid environment variable \"" + entry + "\": empty name");
  if (entry.find('\0') != std::string::npos)
    f.fail("invalid environment variable: contains a NUL byte");
}

}  // namespace

Process parse_process_field(const Field& f) {
  f.expect_object();
  Process p;
  if (auto v = optional_bool(f, "terminal")) p.terminal = *v;
  if (auto cs = f.member("consoleSize")) {
    ConsoleSize size;
    size.height = cs->required("height").as<unsigned>();
    size.width = cs->required("width").as<unsigned>();
    p.console_size = size;
  }
  if (auto u = f.member("user")) {
    u->expect_object();
    p.user = parse_user(*u);
  }

  auto args = f.required("args");
  p.args = args.as_string_list();
  if (p.args.empty()) args.fail("args must not be empty");

  if (auto env = f.member("env")) {
    env->for_each_element([&](const Field& e) {
      std::string entry = e.as_string();
      check_env(e, entry);
      p.env.push_back(std::move(entry));
    });
  }

  auto cwd = f.required("cwd");
  p.cwd = cwd.as_string();
  if (p.cwd.empty() || p.cwd[0] != '/')
    cwd.fail("cwd \"" + p.cwd + "\" must be an absolute path");

  if (auto caps = f.member("capabilities")) p.capabilities = parse_capabilities(*caps);

  if (auto rl = f.member("rlimits")) {
    std::set<std::string> seen;
    rl->for_each_element([&](const Field& e) {
      Rlimit r = parse_rlimit(e);
      if (!seen.insert(r.type).second) e.fail("duplicate rlimit type \"" + r.type + "\"");
      p.rlimits.push_back(std::move(r));
    });
  }

  if (auto v = optional_bool(f, "noNewPrivileges")) p.no_new_privileges = *v;
  p.apparmor_profile = string_or_empty(f, "apparmorProfile");
  p.selinux_label = string_or_empty(f, "selinuxLabel");
  if (auto v = f.member("oomScoreAdj")) {
    int adj = v->as<int>();
    if (adj < -1000 || adj > 1000)
      v->fail("oomScoreAdj " + std::to_string(adj) + " out of range [-1000, 1000]");
    p.oom_score_adj = adj;
  }
  return p;
}

}  // namespace detail

Process parse_process(const nlohmann::json& doc, const std::string& source) {
  return detail::parse_process_field(detail::Field(doc, "", source));
}

}  // namespace crx::spec
