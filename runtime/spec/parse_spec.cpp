// config.json top level: version, root, process, mounts, hooks, annotations,
// and the linux object, then the checks that span several parts.
#include "common/error.hpp"
#include "spec/parse_parts.hpp"

namespace crx::spec {
namespace detail {
namespace {

bool is_absolute(const std::string& path) { return !path.empty() && path[0] == '/'; }

Root parse_root(const Field& f) {
  f.expect_object();
  Root r;
  auto path = f.required("path");
  r.path = path.as_string();
  if (r.path.empty()) path.fail("root path must not be empty");
  if (auto ro = optional_bool(f, "readonly")) r.readonly = *ro;
  return r;
}

Mount parse_mount(const Field& f) {
  f.expect_object();
  Mount m;
  auto dest = f.required("destination");
  m.destination = dest.as_string();
  if (m.destination.empty()) dest.fail("mount destination must not be empty");
  // runtime-spec 1.0 allowed relative destinations; runc reads them as
  // relative to the container's root, and so do we.
  if (!is_absolute(m.destination)) m.destination = "/" + m.destination;
  m.type = string_or_empty(f, "type");
  m.source = string_or_empty(f, "source");
  if (auto o = f.member("options")) m.options = o->as_string_list();
  for (const char* key : {"uidMappings", "gidMappings"})
    if (auto idmap = f.member(key)) idmap->fail("idmapped mounts are not supported");
  return m;
}

Hook parse_hook(const Field& f) {
  f.expect_object();
  Hook h;
  auto path = f.required("path");
  h.path = path.as_string();
  if (!is_absolute(h.path)) path.fail("hook path \"" + h.path + "\" must be absolute");
  if (auto a = f.member("args")) h.args = a->as_string_list();
  if (auto e = f.member("env")) h.env = e->as_string_list();
  if (auto t = f.member("timeout")) {
    h.timeout = t->as<int>();
    if (*h.timeout <= 0) t->fail("hook timeout must be above 0 seconds");
  }
  return h;
}

std::vector<Hook> hook_list(const Field& hooks, std::string_view key) {
  std::vector<Hook> out;
  if (auto list = hooks.member(key))
    list->for_each_element([&](const Field& e) { out.push_back(parse_hook(e)); });
  return out;
}

Hooks parse_hooks(const Field& f) {
  f.expect_object();
  Hooks h;
  h.prestart = hook_list(f, "prestart");
  h.create_runtime = hook_list(f, "createRuntime");
  h.create_container = hook_list(f, "createContainer");
  h.start_container = hook_list(f, "startContainer");
  h.poststart = hook_list(f, "poststart");
  h.poststop = hook_list(f, "poststop");
  return h;
}

void check_version(const Field& f, const std::string& version) {
  if (version.rfind("1.", 0) != 0)
    f.fail("unsupported ociVersion \"" + version + "\" (crx supports runtime-spec 1.x)");
}

}  // namespace
}  // namespace detail

Spec parse_spec(const nlohmann::json& doc, const std::string& source) {
  using detail::Field;
  Field root(doc, "", source);
  root.expect_object();
  Spec s;
  auto version = root.required("ociVersion");
  s.oci_version = version.as_string();
  detail::check_version(version, s.oci_version);
  s.root = detail::parse_root(root.required("root"));
  s.process = detail::parse_process_field(root.required("process"));
  s.hostname = detail::string_or_empty(root, "hostname");
  s.domainname = detail::string_or_empty(root, "domainname");
  if (auto mounts = root.member("mounts"))
    mounts->for_each_element([&](const Field& m) { s.mounts.push_back(detail::parse_mount(m)); });
  if (auto hooks = root.member("hooks")) s.hooks = detail::parse_hooks(*hooks);
  if (auto a = root.member("annotations")) s.annotations = a->as_string_map();
  if (auto lx = root.member("linux")) s.linux = detail::parse_linux_field(*lx);
  detail::validate_cross_fields(s, root);
  s.raw = doc;
  return s;
}

}  // namespace crx::spec
