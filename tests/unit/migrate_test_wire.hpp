// The wire security for protocol tests with fake CRIU sides: TLS, as by
// default, where this kernel can take the page channel (kernel TLS); clear
// text where it cannot (the TLS paths are covered by migrate_tls_test and
// tests/host/migrate_ktls_test then).
#pragma once
#include "migrate/auth.hpp"
#include "migrate/kernel_tls.hpp"

namespace crx::test {

inline crx::migrate::WireSecurity protocol_test_wire() {
  static const bool ktls = crx::migrate::kernel_tls_available();
  return ktls ? crx::migrate::WireSecurity::Tls : crx::migrate::WireSecurity::Plaintext;
}

}  // namespace crx::test
