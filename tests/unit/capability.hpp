// For tests that need a privilege: whether this process has the
// capabilities, asked of the kernel (libcap) rather than inferred from uid
// 0, which is wrong both ways (root in a container without CAP_SYS_ADMIN,
// a non-root user given CAP_NET_ADMIN). Without one the test is skipped,
// naming it, instead of failing or passing without testing anything.
#pragma once
#include <gtest/gtest.h>
#include <sys/capability.h>

#include <initializer_list>
#include <string>

#include "linux/capabilities.hpp"

namespace crx::test {

// Whether cap is in this process's effective set.
inline bool has_capability(cap_value_t cap) {
  cap_t caps = ::cap_get_proc();
  if (!caps) return false;
  cap_flag_value_t value = CAP_CLEAR;
  const bool known = ::cap_get_flag(caps, cap, CAP_EFFECTIVE, &value) == 0;
  ::cap_free(caps);
  return known && value == CAP_SET;
}

// The name of the first of caps this process lacks ("CAP_SYS_ADMIN"), or
// "" when it has them all.
inline std::string missing_capability(std::initializer_list<cap_value_t> caps) {
  for (cap_value_t cap : caps)
    if (!has_capability(cap)) return crx::linux_::capability_name(cap);
  return "";
}

}  // namespace crx::test

// In a test body: skip the test unless this process has every capability
// named (CAP_SYS_ADMIN, ...); the skip message names the one it lacks.
#define CRX_SKIP_WITHOUT(...)                                                        \
  do {                                                                               \
    const std::string crx_missing_cap = ::crx::test::missing_capability({__VA_ARGS__}); \
    if (!crx_missing_cap.empty()) GTEST_SKIP() << "needs " << crx_missing_cap;        \
  } while (0)
