// The runtime-spec version crx implements: written by `crx spec`, reported
// in state JSON and `crx features`.
#pragma once

namespace crx::spec {

inline constexpr char kOciVersion[] = "1.1.0";

}  // namespace crx::spec
