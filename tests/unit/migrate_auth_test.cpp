#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <cstdlib>
#include <future>
#include <string>

#include "common/error.hpp"
#include "common/fs.hpp"
#include "migrate/auth.hpp"

namespace {

using crx::migrate::FrameConn;
using crx::migrate::FrameType;
using crx::migrate::SharedKey;

struct Pair {
  FrameConn client;
  FrameConn server;
};

Pair make_pair() {
  int sv[2];
  EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
  Pair p{FrameConn(crx::UniqueFd(sv[0]), "receiver"), FrameConn(crx::UniqueFd(sv[1]), "sender")};
  p.client.set_timeout(std::chrono::milliseconds(5000));
  p.server.set_timeout(std::chrono::milliseconds(5000));
  return p;
}

std::string temp_dir() {
  char tmpl[] = "/tmp/crx-auth-XXXXXX";
  const char* d = ::mkdtemp(tmpl);
  EXPECT_NE(d, nullptr);
  return d;
}

// Runs the server in a thread; returns (server error, client error).
std::pair<std::string, std::string> handshake(const SharedKey& server_key,
                                              const SharedKey& client_key) {
  auto p = make_pair();
  auto server = std::async(std::launch::async, [&] {
    try {
      auto peer = crx::migrate::authenticate_as_server(p.server, server_key);
      return std::string("ok:") + peer.channel + ":" + peer.session;
    } catch (const crx::Error& e) {
      return std::string(e.what());
    }
  });
  std::string client = "ok";
  try {
    crx::migrate::authenticate_as_client(p.client, client_key, "control", "s1");
  } catch (const crx::Error& e) {
    client = e.what();
  }
  return {server.get(), client};
}

TEST(MigrateAuth, SameKeyAuthenticatesBothWaysAndCarriesChannelAndSession) {
  auto key = SharedKey::from_bytes("0123456789abcdef-shared");
  auto [server, client] = handshake(key, key);
  EXPECT_EQ(server, "ok:control:s1");
  EXPECT_EQ(client, "ok");
}

TEST(MigrateAuth, WrongKeyIsRefusedWithAClearErrorOnBothSides) {
  auto [server, client] = handshake(SharedKey::from_bytes("receiver-key-0123456789"),
                                    SharedKey::from_bytes("sender-key-0123456789"));
  // The client checks the server's proof first and refuses it.
  EXPECT_NE(client.find("authentication failed"), std::string::npos) << client;
  EXPECT_NE(client.find("key"), std::string::npos) << client;
  EXPECT_NE(server.find("authentication failed"), std::string::npos) << server;
}

TEST(MigrateAuth, ServerRefusesBulkDataBeforeAuthentication) {
  auto p = make_pair();
  // A peer that skips the handshake and sends a big image frame.
  p.client.send(FrameType::ImageData, std::string(64 * 1024, 'x'));
  try {
    crx::migrate::authenticate_as_server(p.server, SharedKey::from_bytes("0123456789abcdef"));
    FAIL() << "server accepted an unauthenticated peer";
  } catch (const crx::Error& e) {
    EXPECT_NE(std::string(e.what()).find("oversized frame"), std::string::npos) << e.what();
  }
  // Nothing beyond the header of the big frame was read.
  EXPECT_EQ(p.server.bytes_received(), crx::migrate::kFrameHeaderSize);
}

TEST(MigrateAuth, ServerRefusesAProofNotMadeWithTheKey) {
  auto key = SharedKey::from_bytes("0123456789abcdef");
  // A peer without the key answers the challenge with a made-up proof.
  auto p = make_pair();
  auto server = std::async(std::launch::async, [&] {
    try {
      crx::migrate::authenticate_as_server(p.server, key);
      return std::string("accepted");
    } catch (const crx::Error& e) {
      return std::string(e.what());
    }
  });
  p.client.send(FrameType::Hello,
                "{\"version\":1,\"channel\":\"control\",\"session\":\"s1\",\"nonce\":\"" +
                    std::string(64, 'a') + "\"}");
  p.client.expect(FrameType::Challenge);
  p.client.send(FrameType::Response, "{\"proof\":\"" + std::string(64, 'b') + "\"}");
  EXPECT_NE(server.get().find("authentication failed"), std::string::npos);
}

// The client's side of a handshake whose Response a relay replaces with a
// made-up proof: the server (same key as the client) refuses it. With
// `forward_refusal` false the relay hangs up instead of passing the
// server's Error frame on.
crx::Error client_error_behind_a_tampering_relay(bool forward_refusal) {
  auto key = SharedKey::from_bytes("0123456789abcdef-shared");
  auto near = make_pair();  // client <-> relay
  auto far = make_pair();   // relay <-> server
  auto server = std::async(std::launch::async, [&] {
    try {
      crx::migrate::authenticate_as_server(far.server, key);
    } catch (const crx::Error&) {
    }
  });
  auto relay = std::async(std::launch::async, [&] {
    auto pass = [](FrameConn& from, FrameConn& to) {
      auto f = from.receive();
      to.send(f.type, f.payload);
    };
    pass(near.server, far.client);  // Hello
    pass(far.client, near.server);  // Challenge
    near.server.receive();          // Response, replaced:
    far.client.send(FrameType::Response, "{\"proof\":\"" + std::string(64, 'b') + "\"}");
    if (forward_refusal) {
      pass(far.client, near.server);  // the server's Error frame
    } else {
      far.client.receive();
      near.server.shutdown();
    }
  });
  crx::Error got("");
  try {
    crx::migrate::authenticate_as_client(near.client, key, "control", "s1");
    ADD_FAILURE() << "the client took a refusal for AuthOk";
  } catch (const crx::Error& e) {
    got = e;
  }
  relay.get();
  server.get();
  return got;
}

TEST(MigrateAuth, AnErrorFrameAfterTheResponseIsTheReceiversRefusal) {
  crx::Error e = client_error_behind_a_tampering_relay(true);
  EXPECT_STREQ(e.what(),
               "authentication failed: the receiver at receiver refused our key "
               "(check the key file on both hosts)");
  EXPECT_EQ(e.cause(), crx::Cause::Permission);
}

TEST(MigrateAuth, ALinkLostAfterTheResponseIsNotTakenForARefusal) {
  crx::Error e = client_error_behind_a_tampering_relay(false);
  EXPECT_STREQ(e.what(), "authentication failed: receiver closed the connection");
  EXPECT_NE(e.cause(), crx::Cause::Permission);
}

TEST(MigrateAuth, RefusalsArePermissionErrorsOnBothSides) {
  auto p = make_pair();
  auto server = std::async(std::launch::async, [&] {
    try {
      crx::migrate::authenticate_as_server(p.server, SharedKey::from_bytes("receiver-key-0123456789"));
    } catch (const crx::Error& e) {
      return e.cause();
    }
    return crx::Cause::Other;
  });
  try {
    crx::migrate::authenticate_as_client(p.client, SharedKey::from_bytes("sender-key-0123456789"),
                                         "control", "s1");
    FAIL() << "a wrong key was accepted";
  } catch (const crx::Error& e) {
    EXPECT_EQ(e.cause(), crx::Cause::Permission) << e.what();
  }
  // The client refused the server's proof first; the server sees its Error frame.
  EXPECT_EQ(server.get(), crx::Cause::Peer);
}

// Found by tests/fuzz (fuzz_migrate_handshake): a Hello whose version is
// not a number escaped as nlohmann's type_error, not as a crx::Error.
TEST(MigrateAuth, HelloWithAVersionOfTheWrongTypeIsAClearError) {
  for (std::string version : {"\"01\"", "1.5", "null", "[1]", "-1", "18446744073709551615"}) {
    auto p = make_pair();
    p.client.send(FrameType::Hello, "{\"version\":" + version + "}");
    try {
      crx::migrate::authenticate_as_server(p.server, SharedKey::from_bytes("0123456789abcdef"));
      FAIL() << "accepted version " << version;
    } catch (const crx::Error& e) {
      EXPECT_NE(std::string(e.what()).find("speaks migration protocol"), std::string::npos)
          << version << ": " << e.what();
    }
    // and the peer is told
    EXPECT_EQ(p.client.receive().type, FrameType::Error) << version;
  }
}

TEST(MigrateAuth, KeyFileMustBeOwnerOnly) {
  auto dir = temp_dir();
  std::string path = dir + "/key";
  crx::write_file(path, "0123456789abcdef0123\n", 0644);
  ::chmod(path.c_str(), 0644);
  try {
    SharedKey::from_file(path);
    FAIL() << "accepted a world-readable key";
  } catch (const crx::Error& e) {
    EXPECT_NE(std::string(e.what()).find("has mode 0644"), std::string::npos) << e.what();
  }
  ::chmod(path.c_str(), 0600);
  EXPECT_NO_THROW(SharedKey::from_file(path));
  crx::remove_tree(dir);
}

TEST(MigrateAuth, KeyFileMissingOrTooShortIsAClearError) {
  auto dir = temp_dir();
  try {
    SharedKey::from_file(dir + "/absent");
    FAIL();
  } catch (const crx::Error& e) {
    EXPECT_NE(std::string(e.what()).find(dir + "/absent"), std::string::npos);
  }
  crx::write_file(dir + "/short", "abc\n", 0600);
  try {
    SharedKey::from_file(dir + "/short");
    FAIL();
  } catch (const crx::Error& e) {
    EXPECT_NE(std::string(e.what()).find("at least 16"), std::string::npos) << e.what();
  }
  crx::remove_tree(dir);
}

TEST(MigrateAuth, TrailingNewlineDoesNotChangeTheKey) {
  auto dir = temp_dir();
  crx::write_file(dir + "/a", "0123456789abcdef\n", 0600);
  crx::write_file(dir + "/b", "0123456789abcdef", 0600);
  EXPECT_EQ(SharedKey::from_file(dir + "/a").hmac("x"), SharedKey::from_file(dir + "/b").hmac("x"));
  EXPECT_NE(SharedKey::from_file(dir + "/a").hmac("x"), SharedKey::from_bytes("other-key-123456").hmac("x"));
  crx::remove_tree(dir);
}

}  // namespace
