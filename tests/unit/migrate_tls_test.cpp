// The migration's TLS (auth.hpp, tls_session.hpp) over real sockets, in
// user space (unix socketpairs; kernel TLS is in tests/host, it needs TCP
// and the tls module): handshake, wrong key, a byte altered on the way,
// wire security mismatch.
#include <gtest/gtest.h>
#include <sys/socket.h>

#include <future>
#include <string>

#include "common/error.hpp"
#include "migrate/auth.hpp"
#include "migrate/kernel_tls.hpp"
#include "tamper_relay.hpp"

namespace {

using crx::migrate::FrameConn;
using crx::migrate::FrameType;
using crx::migrate::SharedKey;
using crx::migrate::WireSecurity;
using crx::test::TamperRelay;

constexpr auto kTls = WireSecurity::Tls;
constexpr auto kClear = WireSecurity::Plaintext;

crx::UniqueFd sock_pair(crx::UniqueFd* other) {
  int sv[2];
  EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
  *other = crx::UniqueFd(sv[1]);
  return crx::UniqueFd(sv[0]);
}

// client <-> relay <-> server
struct Link {
  std::unique_ptr<FrameConn> client, server;
  std::unique_ptr<TamperRelay> relay;
  Link() {
    crx::UniqueFd near_relay, far_relay;
    crx::UniqueFd c = sock_pair(&near_relay);
    crx::UniqueFd s = sock_pair(&far_relay);
    client = std::make_unique<FrameConn>(std::move(c), "receiver");
    server = std::make_unique<FrameConn>(std::move(s), "sender");
    client->set_timeout(std::chrono::milliseconds(5000));
    server->set_timeout(std::chrono::milliseconds(5000));
    relay = std::make_unique<TamperRelay>(std::move(near_relay), std::move(far_relay));
  }
};

struct Result {
  std::string server, client;
  crx::Cause server_cause = crx::Cause::Other, client_cause = crx::Cause::Other;
};

Result handshake(Link& l, const SharedKey& skey, WireSecurity swire, const SharedKey& ckey,
                 WireSecurity cwire, const char* channel = "control") {
  Result r;
  auto server = std::async(std::launch::async, [&] {
    try {
      auto who = crx::migrate::authenticate_as_server(*l.server, skey, swire);
      r.server = "ok:" + who.channel + ":" + who.session;
    } catch (const crx::Error& e) {
      r.server = e.what();
      r.server_cause = e.cause();
    }
  });
  try {
    crx::migrate::authenticate_as_client(*l.client, ckey, channel, "5e55", cwire);
    r.client = "ok";
  } catch (const crx::Error& e) {
    r.client = e.what();
    r.client_cause = e.cause();
  }
  server.get();
  return r;
}

const SharedKey& key() {
  static SharedKey k = SharedKey::from_bytes("0123456789abcdef-shared-test-key");
  return k;
}

TEST(MigrateTls, HandshakeCarriesChannelAndSessionAndFramesTravelEncrypted) {
  Link l;
  Result r = handshake(l, key(), kTls, key(), kTls);
  ASSERT_EQ(r.server, "ok:control:5e55");
  ASSERT_EQ(r.client, "ok");
  EXPECT_TRUE(l.client->encrypted());
  EXPECT_TRUE(l.server->encrypted());
  std::string secret = "a manifest with a secret: " + std::string(2000, 'S');
  uint64_t before = l.relay->forwarded();
  l.client->send(FrameType::Manifest, secret);
  auto f = l.server->receive();
  EXPECT_EQ(f.type, FrameType::Manifest);
  EXPECT_EQ(f.payload, secret);
  // The frame's bytes went through the relay sealed: more than the frame
  // (record header and tag), and the answer comes back the same way.
  EXPECT_GT(l.relay->forwarded() - before, secret.size() + crx::migrate::kFrameHeaderSize);
  l.server->send(FrameType::Accept, "{}");
  EXPECT_EQ(l.client->receive().type, FrameType::Accept);
}

// The page channel's switch to kernel TLS names what is missing: the
// module (here, or on any host without it) or, where the kernel has TLS,
// that it refused the key (a unix socket cannot take it).
TEST(MigrateTls, PageChannelWithoutKernelTlsNamesWhy) {
  Link l;
  Result r = handshake(l, key(), kTls, key(), kTls, "pages");
  ASSERT_EQ(r.client, "ok");
  std::string why;
  bool available = crx::migrate::kernel_tls_available(&why);
  try {
    l.client->release_fd();
    FAIL() << "a unix socket took kernel TLS";
  } catch (const crx::Error& e) {
    std::string what = e.what();
    EXPECT_EQ(e.cause(), crx::Cause::Unsupported) << what;
    if (available) {
      EXPECT_NE(what.find("refused the page channel's sending key"), std::string::npos) << what;
    } else {
      ASSERT_FALSE(why.empty());
      EXPECT_NE(what.find(why), std::string::npos) << what;
    }
  }
}

// OpenSSL writes with write(2): a peer gone must be an error, not a
// SIGPIPE that kills crx without a word (this binary would die here).
TEST(MigrateTls, SendingToAGonePeerIsAnErrorNotASignal) {
  Link l;
  Result r = handshake(l, key(), kTls, key(), kTls);
  ASSERT_EQ(r.client, "ok");
  l.relay.reset();  // closes the client's peer end
  l.server.reset();
  std::string big(256 * 1024, 'x');
  EXPECT_THROW(
      {
        for (int i = 0; i < 8; ++i) l.client->send(FrameType::Manifest, big);
      },
      crx::Error);
}

TEST(MigrateTls, WrongKeyIsRefusedWithOneClearLineOnBothSides) {
  Link l;
  Result r = handshake(l, SharedKey::from_bytes("receiver-key-0123456789"), kTls,
                       SharedKey::from_bytes("sender-key-0123456789"), kTls);
  EXPECT_EQ(r.server,
            "authentication failed: sender does not know the migration key (check the key file "
            "on both hosts)");
  EXPECT_EQ(r.client,
            "authentication failed: the receiver at receiver refused our key (check the key "
            "file on both hosts)");
  EXPECT_EQ(r.server_cause, crx::Cause::Permission);
  EXPECT_EQ(r.client_cause, crx::Cause::Permission);
}

TEST(MigrateTls, PlaintextAgainstTlsIsRefusedBeforeAnythingElseBothWays) {
  for (bool server_tls : {true, false}) {
    Link l;
    Result r = handshake(l, key(), server_tls ? kTls : kClear, key(), server_tls ? kClear : kTls);
    SCOPED_TRACE(server_tls ? "TLS receiver" : "clear-text receiver");
    for (const std::string& line : {r.server, r.client}) {
      EXPECT_NE(line.find("pass --insecure-plaintext to both crx migrate and crx receive, or to "
                          "neither"),
                std::string::npos)
          << line;
      EXPECT_EQ(line.find('\n'), std::string::npos) << line;
    }
    EXPECT_NE(r.server.find(server_tls ? "this receiver requires TLS" : "uses TLS"),
              std::string::npos)
        << r.server;
    EXPECT_EQ(r.client_cause, crx::Cause::Peer);
    EXPECT_FALSE(l.client->encrypted());
  }
}

TEST(MigrateTls, ClearTextOnBothEndsStillProvesTheKey) {
  Link ok;
  EXPECT_EQ(handshake(ok, key(), kClear, key(), kClear).server, "ok:control:5e55");
  Link wrong;
  Result r = handshake(wrong, key(), kClear, SharedKey::from_bytes("another-key-0123456789"), kClear);
  EXPECT_NE(r.client.find("authentication failed"), std::string::npos) << r.client;
  EXPECT_NE(r.server.find("authentication failed"), std::string::npos) << r.server;
}

// After the handshake, the relay alters one client->server byte of the
// next frame: the receiver refuses it instead of taking it.
std::string receive_after_tampering(TamperRelay::Action action) {
  Link l;
  Result r = handshake(l, key(), kTls, key(), kTls);
  EXPECT_EQ(r.client, "ok");
  // The header and the payload go out as two records (38 bytes, then
  // 5 + 300 + 17): byte 100 is inside the payload's sealed bytes.
  l.relay->tamper_at(l.relay->forwarded() + 100, action);
  l.client->send(FrameType::Manifest, std::string(300, 'm'));
  l.client->shutdown();  // a dropped byte would otherwise just wait for one more
  try {
    auto f = l.server->receive();
    return "delivered a " + std::string(crx::migrate::frame_type_name(f.type)) + " frame";
  } catch (const crx::Error& e) {
    return e.what();
  }
}

TEST(MigrateTls, AFlippedByteInAControlFrameFailsTheIntegrityCheck) {
  EXPECT_EQ(receive_after_tampering(TamperRelay::Action::Flip),
            "TLS record from sender failed its integrity check (altered in transit)");
}

TEST(MigrateTls, ADroppedOrInjectedByteEndsTheConnectionWithoutAFrame) {
  for (auto a : {TamperRelay::Action::Drop, TamperRelay::Action::Inject}) {
    std::string got = receive_after_tampering(a);
    EXPECT_EQ(got.find("delivered"), std::string::npos) << got;
    EXPECT_EQ(got.find('\n'), std::string::npos) << got;
  }
}

// RFC 8448 section 3 (simple 1-RTT): the server's handshake traffic key and
// IV from its secret, as the kernel gets them for the page channel.
TEST(MigrateTls, KernelKeysAreDerivedAsRfc8446Says) {
  auto unhex = [](const std::string& h) {
    std::string out;
    for (size_t i = 0; i < h.size(); i += 2) out.push_back(static_cast<char>(std::stoi(h.substr(i, 2), nullptr, 16)));
    return out;
  };
  std::string secret = unhex("b67b7d690cc16c4e75e54213cb2d37b4e9c912bcded9105d42befd59d391ad38");
  EXPECT_EQ(crx::migrate::hkdf_expand_label_sha256(secret, "key", 16),
            unhex("3fce516009c21727d0f2e4e86ee403bc"));
  EXPECT_EQ(crx::migrate::hkdf_expand_label_sha256(secret, "iv", 12),
            unhex("5d313eb2671276ee13000b30"));
}

TEST(MigrateTls, PskIsDerivedFromTheKeyNotTheKeyItself) {
  auto a = SharedKey::from_bytes("0123456789abcdef");
  EXPECT_EQ(a.tls_psk().size(), 32u);
  EXPECT_EQ(a.tls_psk(), SharedKey::from_bytes("0123456789abcdef").tls_psk());
  EXPECT_NE(a.tls_psk(), SharedKey::from_bytes("0123456789abcdeF").tls_psk());
  EXPECT_EQ(a.tls_psk().find("0123456789abcdef"), std::string::npos);
}

}  // namespace
