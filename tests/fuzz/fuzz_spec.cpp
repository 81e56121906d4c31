// config.json -> Spec: the text as `crx create/run` reads it
// (parse_spec_text = load_spec without the file), then what the parent
// computes from a valid Spec before it clones anything: mount options, the
// cgroup device filter, the seccomp filter. The same document also goes
// through parse_process (exec --process) and parse_resources (update
// --resources). A crx::Error is a clean refusal; anything else escaping,
// or a sanitizer report, is a finding.
#include <cstddef>
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "common/error.hpp"
#include "cgroup/bpf_devices.hpp"
#include "linux/mount_options.hpp"
#include "linux/seccomp.hpp"
#include "spec/spec.hpp"

namespace {

void use_spec(const crx::spec::Spec& s) {
  for (const auto& m : s.mounts) {
    try {
      (void)crx::mounts::parse_mount_options(m.options);
    } catch (const crx::Error&) {
    }
  }
  try {
    (void)crx::mounts::propagation_flags(s.linux.rootfs_propagation);
  } catch (const crx::Error&) {
  }
  if (s.linux.resources) (void)crx::cgroup::bpf::device_filter(s.linux.resources->devices);
  if (s.linux.seccomp) {
    try {
      (void)crx::linux_::build_seccomp(*s.linux.seccomp);
    } catch (const crx::Error&) {
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  try {
    use_spec(crx::spec::parse_spec_text(text, "config.json"));
  } catch (const crx::Error&) {
  }
  auto doc = nlohmann::json::parse(text, nullptr, false);
  if (doc.is_discarded()) return 0;
  try {
    (void)crx::spec::parse_process(doc, "process.json");
  } catch (const crx::Error&) {
  }
  try {
    (void)crx::spec::parse_resources(doc, "resources");
  } catch (const crx::Error&) {
  }
  return 0;
}
