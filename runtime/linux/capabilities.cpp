#include "linux/capabilities.hpp"

#include <sys/capability.h>
#include <sys/prctl.h>

#include <algorithm>
#include <cctype>
#include <memory>

#include "common/error.hpp"
#include "common/log.hpp"

namespace crx::linux_ {
namespace {

struct CapFree {
  void operator()(void* p) const { cap_free(p); }
};

bool listed(const std::vector<int>& set, int cap) {
  return std::find(set.begin(), set.end(), cap) != set.end();
}

void set_flag(cap_t caps, cap_flag_t flag, const std::vector<int>& list, const char* set_name) {
  if (list.empty()) return;
  std::vector<cap_value_t> values(list.begin(), list.end());
  for (int cap : list)
    if (cap < 0 || cap > last_capability())
      throw Error(std::string("capabilities: ") + set_name + ": " + capability_name(cap) +
                  " is not supported by this kernel");
  if (cap_set_flag(caps, flag, static_cast<int>(values.size()), values.data(), CAP_SET) < 0)
    throw_errno(std::string("capabilities: set ") + set_name);
}

}  // namespace

int last_capability() {
  // cap_max_bits() reads /proc/sys/kernel/cap_last_cap (or probes).
  static const int last = static_cast<int>(cap_max_bits()) - 1;
  return last;
}

std::string capability_name(int cap) {
  std::unique_ptr<char, CapFree> name(cap_to_name(static_cast<cap_value_t>(cap)));
  if (!name) return std::to_string(cap);
  std::string out = name.get();
  if (!out.empty() && std::isdigit(static_cast<unsigned char>(out[0]))) return out;
  for (auto& ch : out) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  return out;
}

void drop_bounding_set(const spec::Capabilities& caps) {
  for (int cap = 0; cap <= last_capability(); ++cap) {
    if (listed(caps.bounding, cap)) continue;
    if (cap_drop_bound(static_cast<cap_value_t>(cap)) < 0)
      throw_errno("capabilities: drop " + capability_name(cap) + " from the bounding set");
  }
}

void keep_capabilities(bool keep) {
  if (::prctl(PR_SET_KEEPCAPS, keep ? 1 : 0, 0, 0, 0) < 0)
    throw_errno(keep ? "capabilities: PR_SET_KEEPCAPS" : "capabilities: clear PR_SET_KEEPCAPS");
}

void apply_capabilities(const spec::Capabilities& caps) {
  std::unique_ptr<_cap_struct, CapFree> state(cap_init());
  if (!state) throw_errno("capabilities: cap_init");
  set_flag(state.get(), CAP_EFFECTIVE, caps.effective, "effective");
  set_flag(state.get(), CAP_PERMITTED, caps.permitted, "permitted");
  set_flag(state.get(), CAP_INHERITABLE, caps.inheritable, "inheritable");
  if (cap_set_proc(state.get()) < 0)
    throw_errno("capabilities: set effective/permitted/inheritable");

  if (cap_reset_ambient() < 0 && errno != EINVAL) throw_errno("capabilities: clear ambient set");
  for (int cap : caps.ambient) {
    // The kernel raises an ambient capability only when it is permitted and
    // inheritable. runc's default spec lists ambient caps without the
    // inheritable set; like runc, skip those with a warning instead of failing.
    if (!listed(caps.permitted, cap) || !listed(caps.inheritable, cap)) {
      log::debug("capabilities: can't raise ambient " + capability_name(cap) +
                ": not in the permitted and inheritable sets");
      continue;
    }
    if (cap_set_ambient(static_cast<cap_value_t>(cap), CAP_SET) < 0)
      throw_errno("capabilities: raise ambient " + capability_name(cap));
  }
}

}  // namespace crx::linux_
