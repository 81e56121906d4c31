// The migration's TLS suite choice (runtime/migrate/tls_cipher.hpp): the
// settings' spelling, the suites offered in which order, the rule that
// picks the faster one, and the handshake agreeing on what both ends
// allow (user space over a socketpair; the kernel's side of each suite is
// in tests/host/migrate_ktls_test.cpp, run in a guest).
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/utsname.h>

#include <future>
#include <string>

#include "common/error.hpp"
#include "migrate/auth.hpp"
#include "migrate/tls_cipher.hpp"
#include "migrate/tls_session.hpp"

namespace {

using crx::migrate::Credentials;
using crx::migrate::FrameConn;
using crx::migrate::SharedKey;
using crx::migrate::TlsCipher;
using crx::migrate::WireSecurity;

TEST(MigrateTlsCipher, SettingsParseAndPrintTheSameWay) {
  for (TlsCipher c : {TlsCipher::Auto, TlsCipher::Aes128Gcm, TlsCipher::Chacha20Poly1305})
    EXPECT_EQ(crx::migrate::parse_tls_cipher(crx::migrate::tls_cipher_name(c), "x"), c);
  EXPECT_STREQ(crx::migrate::tls_cipher_name(TlsCipher::Chacha20Poly1305), "chacha20-poly1305");
}

TEST(MigrateTlsCipher, AnUnknownSettingNamesWhereItCameFromAndTheChoices) {
  try {
    crx::migrate::parse_tls_cipher("aes-256-gcm", "--tls-cipher");
    FAIL() << "an unknown cipher was taken";
  } catch (const crx::Error& e) {
    EXPECT_EQ(e.cause(), crx::Cause::Invalid);
    EXPECT_EQ(std::string(e.what()),
              "--tls-cipher: unknown TLS cipher \"aes-256-gcm\" (auto, aes-128-gcm or "
              "chacha20-poly1305)");
  }
}

TEST(MigrateTlsCipher, SuitesHaveTheirIanaNamesAndIds) {
  EXPECT_STREQ(crx::migrate::tls13_suite_name(TlsCipher::Aes128Gcm), "TLS_AES_128_GCM_SHA256");
  EXPECT_EQ(crx::migrate::tls13_suite_id(TlsCipher::Aes128Gcm), 0x1301);
  EXPECT_STREQ(crx::migrate::tls13_suite_name(TlsCipher::Chacha20Poly1305),
               "TLS_CHACHA20_POLY1305_SHA256");
  EXPECT_EQ(crx::migrate::tls13_suite_id(TlsCipher::Chacha20Poly1305), 0x1303);
  EXPECT_EQ(crx::migrate::tls_cipher_of_suite(0x1303), TlsCipher::Chacha20Poly1305);
  EXPECT_EQ(crx::migrate::tls_cipher_of_suite(0x1302), std::nullopt);  // AES-256: not offered
}

TEST(MigrateTlsCipher, ASettingOffersOnlyItsSuiteAutoOffersBothFasterFirst) {
  EXPECT_EQ(crx::migrate::tls13_ciphersuites(TlsCipher::Aes128Gcm), "TLS_AES_128_GCM_SHA256");
  EXPECT_EQ(crx::migrate::tls13_ciphersuites(TlsCipher::Chacha20Poly1305),
            "TLS_CHACHA20_POLY1305_SHA256");
  const std::string both = crx::migrate::tls13_ciphersuites(TlsCipher::Auto);
  utsname u{};
  ASSERT_EQ(::uname(&u), 0);
  if (!crx::migrate::release_has_ktls_chacha(u.release)) {
    EXPECT_EQ(both, "TLS_AES_128_GCM_SHA256");
  } else if (crx::migrate::faster_kernel_cipher() == TlsCipher::Chacha20Poly1305) {
    EXPECT_EQ(both, "TLS_CHACHA20_POLY1305_SHA256:TLS_AES_128_GCM_SHA256");
  } else {
    EXPECT_EQ(both, "TLS_AES_128_GCM_SHA256:TLS_CHACHA20_POLY1305_SHA256");
  }
}

TEST(MigrateTlsCipher, KtlsHasChachaFromLinux511) {
  using crx::migrate::release_has_ktls_chacha;
  EXPECT_TRUE(release_has_ktls_chacha("6.1.0-56-amd64"));  // Debian 12, the guests
  EXPECT_TRUE(release_has_ktls_chacha("5.11.0"));
  EXPECT_TRUE(release_has_ktls_chacha("10.0"));
  EXPECT_FALSE(release_has_ktls_chacha("5.10.0-28-amd64"));  // Debian 11
  EXPECT_FALSE(release_has_ktls_chacha("4.19.0"));
  EXPECT_FALSE(release_has_ktls_chacha("garbage"));
  EXPECT_FALSE(release_has_ktls_chacha("6"));
}

TEST(MigrateTlsCipher, TheFasterMeasuredCipherWinsAesGcmWhenUnknown) {
  using crx::migrate::faster_cipher;
  EXPECT_EQ(faster_cipher(20e6, 76e6), TlsCipher::Chacha20Poly1305);  // the bed's TCG guests
  EXPECT_EQ(faster_cipher(4e9, 1.5e9), TlsCipher::Aes128Gcm);         // AES-NI hardware
  EXPECT_EQ(faster_cipher(std::nullopt, 76e6), TlsCipher::Aes128Gcm);
  EXPECT_EQ(faster_cipher(20e6, std::nullopt), TlsCipher::Aes128Gcm);
  EXPECT_EQ(faster_cipher(std::nullopt, std::nullopt), TlsCipher::Aes128Gcm);
  EXPECT_EQ(faster_cipher(5e6, 5e6), TlsCipher::Aes128Gcm);  // a tie keeps the default
}

// Where the kernel has AF_ALG the measurement is a throughput; where it
// has not (this sandbox's host) it says so and auto falls back to AES-GCM.
TEST(MigrateTlsCipher, KernelMeasurementIsAThroughputOrNothing) {
  for (TlsCipher c : {TlsCipher::Aes128Gcm, TlsCipher::Chacha20Poly1305}) {
    auto bps = crx::migrate::kernel_aead_bytes_per_second(c, 64 * 1024);
    if (bps) EXPECT_GT(*bps, 0);
  }
  if (!crx::migrate::kernel_aead_bytes_per_second(TlsCipher::Aes128Gcm, 16384))
    EXPECT_EQ(crx::migrate::faster_kernel_cipher(), TlsCipher::Aes128Gcm);
}

const SharedKey& key() {
  static SharedKey k = SharedKey::from_bytes("0123456789abcdef-cipher-test-key");
  return k;
}

struct Agreed {
  std::string client, server;  // the suite's name, or the error
};

// A TLS handshake over a socketpair with each end's setting.
Agreed handshake(TlsCipher client_setting, TlsCipher server_setting) {
  int sv[2];
  EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
  FrameConn client(crx::UniqueFd(sv[0]), "receiver"), server(crx::UniqueFd(sv[1]), "sender");
  client.set_timeout(std::chrono::milliseconds(5000));
  server.set_timeout(std::chrono::milliseconds(5000));
  Agreed a;
  auto srv = std::async(std::launch::async, [&] {
    try {
      crx::migrate::authenticate_as_server(
          server, Credentials{WireSecurity::Tls, &key(), nullptr, server_setting});
      a.server = crx::migrate::tls13_suite_name(server.tls()->negotiated());
    } catch (const crx::Error& e) {
      a.server = e.what();
    }
  });
  try {
    crx::migrate::authenticate_as_client(
        client, Credentials{WireSecurity::Tls, &key(), nullptr, client_setting}, "control", "5e55");
    a.client = crx::migrate::tls13_suite_name(client.tls()->negotiated());
  } catch (const crx::Error& e) {
    a.client = e.what();
  }
  srv.get();
  return a;
}

TEST(MigrateTlsCipher, TheHandshakeTakesTheClientsFirstSuiteTheServerAllows) {
  const std::string chacha = "TLS_CHACHA20_POLY1305_SHA256", aes = "TLS_AES_128_GCM_SHA256";
  Agreed a = handshake(TlsCipher::Chacha20Poly1305, TlsCipher::Auto);
  EXPECT_EQ(a.client, chacha);
  EXPECT_EQ(a.server, chacha);
  a = handshake(TlsCipher::Aes128Gcm, TlsCipher::Auto);
  EXPECT_EQ(a.client, aes);
  EXPECT_EQ(a.server, aes);
  a = handshake(TlsCipher::Auto, TlsCipher::Chacha20Poly1305);  // the server narrows it
  EXPECT_EQ(a.client, chacha);
  EXPECT_EQ(a.server, chacha);
  const std::string first = crx::migrate::tls13_suite_name(crx::migrate::faster_kernel_cipher());
  a = handshake(TlsCipher::Auto, TlsCipher::Auto);
  EXPECT_EQ(a.client, first);
  EXPECT_EQ(a.server, first);
}

TEST(MigrateTlsCipher, EndsSetToDifferentSuitesFailTheHandshakeOnBothSides) {
  Agreed a = handshake(TlsCipher::Aes128Gcm, TlsCipher::Chacha20Poly1305);
  EXPECT_NE(a.client.find("TLS handshake with receiver failed"), std::string::npos) << a.client;
  EXPECT_NE(a.server.find("no shared cipher"), std::string::npos) << a.server;
}

}  // namespace
