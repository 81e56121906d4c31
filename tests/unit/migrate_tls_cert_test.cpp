// The migration's TLS with X.509 certificates (cert_credentials.hpp,
// auth.hpp) over unix socketpairs: a throwaway CA and certificates are made
// here with OpenSSL's API for each test. Good certificates handshake;
// another CA, an expired or revoked certificate, the wrong peer name, a key
// that is not the certificate's, and a peer using the shared key or clear
// text are refused with one line and Cause::Permission / Invalid / Peer.
#include <gtest/gtest.h>
#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <future>
#include <string>

#include <nlohmann/json.hpp>

#include "common/error.hpp"
#include "common/fs.hpp"
#include "migrate/auth.hpp"
#include "migrate/cert_credentials.hpp"
#include "migrate/tls_session.hpp"
#include "../support/temp_dir.hpp"

namespace {

using crx::Cause;
using crx::migrate::CertCredentials;
using crx::migrate::Credentials;
using crx::migrate::FrameConn;
using crx::migrate::FrameType;
using crx::migrate::SharedKey;
using crx::migrate::WireSecurity;

constexpr long kDay = 24 * 3600;

struct Key {
  EVP_PKEY* p = nullptr;
  Key() : p(EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", "P-256")) {}
  ~Key() { EVP_PKEY_free(p); }
  Key(const Key&) = delete;
  Key& operator=(const Key&) = delete;
};

struct Cert {
  X509* x = nullptr;
  Cert() = default;
  explicit Cert(X509* c) : x(c) {}
  Cert(Cert&& o) noexcept : x(o.x) { o.x = nullptr; }
  ~Cert() { X509_free(x); }
};

void add_ext(X509* cert, X509* issuer, int nid, const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
  ASSERT_NE(ext, nullptr) << value;
  X509_add_ext(cert, ext, -1);
  X509_EXTENSION_free(ext);
}

// A certificate for `key` named cn, signed by issuer (self-signed when
// issuer is null), valid from now+from to now+until (seconds).
Cert make_cert(const std::string& cn, const Key& key, const Cert* issuer, const Key& issuer_key,
               bool ca, long serial, long from = -kDay, long until = 30 * kDay,
               const char* san = nullptr) {
  Cert c(X509_new());
  X509_set_version(c.x, 2);
  ASN1_INTEGER_set(X509_get_serialNumber(c.x), serial);
  X509_gmtime_adj(X509_getm_notBefore(c.x), from);
  X509_gmtime_adj(X509_getm_notAfter(c.x), until);
  X509_set_pubkey(c.x, key.p);
  X509_NAME* name = X509_get_subject_name(c.x);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>(cn.c_str()), -1, -1, 0);
  X509* signer = issuer ? issuer->x : c.x;
  X509_set_issuer_name(c.x, X509_get_subject_name(signer));
  if (ca) {
    add_ext(c.x, signer, NID_basic_constraints, "critical,CA:TRUE");
    add_ext(c.x, signer, NID_key_usage, "critical,keyCertSign,cRLSign");
  } else {
    add_ext(c.x, signer, NID_basic_constraints, "CA:FALSE");
  }
  if (san) add_ext(c.x, signer, NID_subject_alt_name, san);
  EXPECT_GT(X509_sign(c.x, issuer_key.p, EVP_sha256()), 0);
  return c;
}

std::string pem(const Cert& c) {
  BIO* b = BIO_new(BIO_s_mem());
  PEM_write_bio_X509(b, c.x);
  char* p = nullptr;
  long n = BIO_get_mem_data(b, &p);
  std::string out(p, static_cast<size_t>(n));
  BIO_free(b);
  return out;
}

std::string pem(const Key& k) {
  BIO* b = BIO_new(BIO_s_mem());
  PEM_write_bio_PrivateKey(b, k.p, nullptr, nullptr, 0, nullptr, nullptr);
  char* p = nullptr;
  long n = BIO_get_mem_data(b, &p);
  std::string out(p, static_cast<size_t>(n));
  BIO_free(b);
  return out;
}

// A CRL of ca revoking the given serial.
std::string crl_pem(const Cert& ca, const Key& ca_key, long revoked_serial) {
  X509_CRL* crl = X509_CRL_new();
  X509_CRL_set_version(crl, 1);
  X509_CRL_set_issuer_name(crl, X509_get_subject_name(ca.x));
  ASN1_TIME* now = X509_gmtime_adj(nullptr, -60);
  ASN1_TIME* next = X509_gmtime_adj(nullptr, 7 * kDay);
  X509_CRL_set1_lastUpdate(crl, now);
  X509_CRL_set1_nextUpdate(crl, next);
  X509_REVOKED* r = X509_REVOKED_new();
  ASN1_INTEGER* serial = ASN1_INTEGER_new();
  ASN1_INTEGER_set(serial, revoked_serial);
  X509_REVOKED_set_serialNumber(r, serial);
  X509_REVOKED_set_revocationDate(r, now);
  X509_CRL_add0_revoked(crl, r);
  X509_CRL_sort(crl);
  EXPECT_GT(X509_CRL_sign(crl, ca_key.p, EVP_sha256()), 0);
  BIO* b = BIO_new(BIO_s_mem());
  PEM_write_bio_X509_CRL(b, crl);
  char* p = nullptr;
  long n = BIO_get_mem_data(b, &p);
  std::string out(p, static_cast<size_t>(n));
  BIO_free(b);
  ASN1_INTEGER_free(serial);
  ASN1_TIME_free(now);
  ASN1_TIME_free(next);
  X509_CRL_free(crl);
  return out;
}

// Two CAs (the cluster's and a stranger's) and files for each end.
class MigrateTlsCert : public ::testing::Test {
 protected:
  crx::test::TempDir tmp{"crx-tls-cert"};
  Key ca_key, other_ca_key;
  Cert ca = make_cert("crx migration CA", ca_key, nullptr, ca_key, true, 1);
  Cert other_ca = make_cert("another CA", other_ca_key, nullptr, other_ca_key, true, 1);

  std::string file(const std::string& name, const std::string& data, mode_t mode = 0644) {
    std::string p = tmp.path() + "/" + name;
    crx::write_file(p, data, mode);
    ::chmod(p.c_str(), mode);
    return p;
  }

  // An end's files: its certificate (signed by `issuer`), key and CA file.
  CertCredentials::Files end(const std::string& name, const Cert& issuer, const Key& issuer_key,
                             long serial, long from = -kDay, long until = 30 * kDay,
                             const std::string& ca_pem = "") {
    Key k;
    std::string san = "DNS:" + name + ".example";
    Cert c = make_cert(name, k, &issuer, issuer_key, false, serial, from, until, san.c_str());
    return {file(name + ".crt", pem(c)), file(name + ".key", pem(k), 0600),
            file(name + "-ca.crt", ca_pem.empty() ? pem(ca) : ca_pem), ""};
  }
  CertCredentials::Files good(const std::string& name, long serial) {
    return end(name, ca, ca_key, serial);
  }
};

struct Result {
  std::string server, client;
  Cause server_cause = Cause::Other, client_cause = Cause::Other;
  bool client_encrypted = false;
};

Result handshake(const Credentials& server, const Credentials& client,
                 const char* channel = "control") {
  int sv[2];
  EXPECT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
  FrameConn c(crx::UniqueFd(sv[0]), "receiver"), s(crx::UniqueFd(sv[1]), "sender");
  c.set_timeout(std::chrono::milliseconds(5000));
  s.set_timeout(std::chrono::milliseconds(5000));
  Result r;
  auto done = std::async(std::launch::async, [&] {
    try {
      auto who = crx::migrate::authenticate_as_server(s, server);
      r.server = "ok:" + who.channel + ":" + who.session;
      if (who.channel == "control") {
        s.send(FrameType::Accept, "{\"secret\":1}");
      }
    } catch (const crx::Error& e) {
      r.server = e.what();
      r.server_cause = e.cause();
    }
  });
  try {
    crx::migrate::authenticate_as_client(c, client, channel, "5e55");
    r.client = "ok";
    r.client_encrypted = c.encrypted();
    if (std::string(channel) == "control" &&
        c.expect(FrameType::Accept).payload != "{\"secret\":1}") {
      r.client = "the first frame after the handshake came garbled";
    }
  } catch (const crx::Error& e) {
    r.client = e.what();
    r.client_cause = e.cause();
  }
  done.get();
  return r;
}

Credentials certs(const CertCredentials& c) { return {WireSecurity::TlsCert, nullptr, &c}; }

void expect_one_line(const Result& r) {
  EXPECT_EQ(r.server.find('\n'), std::string::npos) << r.server;
  EXPECT_EQ(r.client.find('\n'), std::string::npos) << r.client;
}

TEST_F(MigrateTlsCert, GoodCertificatesHandshakeAndCarryChannelAndSession) {
  auto s = CertCredentials::from_files(good("receiver", 10));
  auto c = CertCredentials::from_files(good("sender", 11));
  EXPECT_NE(s.subject().find("receiver"), std::string::npos) << s.subject();
  for (const char* channel : {"control", "pages"}) {
    SCOPED_TRACE(channel);
    Result r = handshake(certs(s), certs(c), channel);
    EXPECT_EQ(r.server, std::string("ok:") + channel + ":5e55");
    EXPECT_EQ(r.client, "ok");
    EXPECT_TRUE(r.client_encrypted);
  }
}

TEST_F(MigrateTlsCert, ExpectedPeerNameIsCheckedBothWays) {
  auto s_files = good("receiver", 10);
  auto c_files = good("sender", 11);
  s_files.peer_name = "sender.example";
  c_files.peer_name = "receiver.example";
  Result ok = handshake(certs(CertCredentials::from_files(s_files)),
                        certs(CertCredentials::from_files(c_files)));
  EXPECT_EQ(ok.server, "ok:control:5e55");
  EXPECT_EQ(ok.client, "ok");
  // The sender expects another receiver: it refuses the one it reached.
  c_files.peer_name = "other.example";
  Result r = handshake(certs(CertCredentials::from_files(s_files)),
                       certs(CertCredentials::from_files(c_files)));
  EXPECT_EQ(r.client,
            "authentication failed: the certificate of receiver was refused: it is not issued to "
            "other.example (--tls-peer-name)");
  EXPECT_EQ(r.client_cause, Cause::Permission);
  EXPECT_NE(r.server.find("authentication failed: sender refused our certificate"),
            std::string::npos)
      << r.server;
  EXPECT_EQ(r.server_cause, Cause::Permission);
  // The receiver expects another sender.
  c_files.peer_name = "receiver.example";
  s_files.peer_name = "10.0.0.9";
  r = handshake(certs(CertCredentials::from_files(s_files)),
                certs(CertCredentials::from_files(c_files)));
  EXPECT_EQ(r.server,
            "authentication failed: the certificate of sender was refused: it is not issued to "
            "10.0.0.9 (--tls-peer-name)");
  EXPECT_EQ(r.server_cause, Cause::Permission);
  expect_one_line(r);
}

// The receiver does not trust the CA of the sender's certificate: the
// sender learns it from the receiver before it would send the manifest
// (AuthOk is awaited on the control connection).
TEST_F(MigrateTlsCert, SenderFromAnotherCaIsRefusedOnBothSides) {
  auto s = CertCredentials::from_files(good("receiver", 10));
  auto c = CertCredentials::from_files(end("sender", other_ca, other_ca_key, 11));
  Result r = handshake(certs(s), certs(c));
  EXPECT_EQ(r.server,
            "authentication failed: the certificate of sender was refused: unable to get local "
            "issuer certificate (check --tls-ca here and --tls-cert there)");
  EXPECT_EQ(r.client,
            "authentication failed: receiver refused our certificate (unknown CA; check "
            "--tls-cert here and --tls-ca there)");
  EXPECT_EQ(r.server_cause, Cause::Permission);
  EXPECT_EQ(r.client_cause, Cause::Permission);
}

TEST_F(MigrateTlsCert, ReceiverFromAnotherCaIsRefusedOnBothSides) {
  auto s = CertCredentials::from_files(end("receiver", other_ca, other_ca_key, 10));
  auto c = CertCredentials::from_files(good("sender", 11));
  Result r = handshake(certs(s), certs(c));
  EXPECT_EQ(r.client,
            "authentication failed: the certificate of receiver was refused: unable to get local "
            "issuer certificate (check --tls-ca here and --tls-cert there)");
  EXPECT_NE(r.server.find("authentication failed: sender refused our certificate (unknown CA"),
            std::string::npos)
      << r.server;
  EXPECT_EQ(r.server_cause, Cause::Permission);
  EXPECT_EQ(r.client_cause, Cause::Permission);
}

TEST_F(MigrateTlsCert, ExpiredCertificateIsRefused) {
  auto s = CertCredentials::from_files(good("receiver", 10));
  auto c = CertCredentials::from_files(end("sender", ca, ca_key, 11, -30 * kDay, -kDay));
  Result r = handshake(certs(s), certs(c));
  EXPECT_EQ(r.server,
            "authentication failed: the certificate of sender was refused: certificate has "
            "expired (check --tls-ca here and --tls-cert there)");
  EXPECT_NE(r.client.find("receiver refused our certificate (certificate expired"),
            std::string::npos)
      << r.client;
  EXPECT_EQ(r.server_cause, Cause::Permission);
  EXPECT_EQ(r.client_cause, Cause::Permission);
  // And a receiver whose certificate is not valid yet.
  auto early = CertCredentials::from_files(end("receiver2", ca, ca_key, 12, kDay, 30 * kDay));
  auto fresh = CertCredentials::from_files(good("sender2", 13));
  r = handshake(certs(early), certs(fresh));
  EXPECT_NE(r.client.find("certificate is not yet valid"), std::string::npos) << r.client;
  EXPECT_EQ(r.client_cause, Cause::Permission);
  expect_one_line(r);
}

TEST_F(MigrateTlsCert, RevokedCertificateInTheCaFilesCrlIsRefused) {
  std::string ca_with_crl = pem(ca) + crl_pem(ca, ca_key, 11);
  auto s = CertCredentials::from_files(end("receiver", ca, ca_key, 10, -kDay, 30 * kDay, ca_with_crl));
  auto revoked = CertCredentials::from_files(good("sender", 11));
  Result r = handshake(certs(s), certs(revoked));
  EXPECT_EQ(r.server,
            "authentication failed: the certificate of sender was refused: certificate revoked "
            "(check --tls-ca here and --tls-cert there)");
  EXPECT_EQ(r.server_cause, Cause::Permission);
  EXPECT_EQ(r.client_cause, Cause::Permission);
  // Serial 12 is not on the list.
  auto fine = CertCredentials::from_files(good("sender2", 12));
  EXPECT_EQ(handshake(certs(s), certs(fine)).server, "ok:control:5e55");
}

// Holding a peer's certificate is not enough: the key must be its own.
TEST_F(MigrateTlsCert, CertificateWithoutItsPrivateKeyIsRefusedAtLoad) {
  auto f = good("sender", 11);
  auto other = good("thief", 12);
  f.key = other.key;  // a valid key, not the certificate's
  try {
    CertCredentials::from_files(f);
    FAIL() << "accepted a key that is not the certificate's";
  } catch (const crx::Error& e) {
    EXPECT_EQ(std::string(e.what()), "TLS key file " + other.key +
                                         " does not hold the private key of the certificate in " +
                                         f.cert);
    EXPECT_EQ(e.cause(), Cause::Invalid);
  }
  f.key = tmp.path() + "/absent.key";
  try {
    CertCredentials::from_files(f);
    FAIL();
  } catch (const crx::Error& e) {
    EXPECT_NE(std::string(e.what()).find("open TLS key file " + f.key), std::string::npos)
        << e.what();
    EXPECT_EQ(e.cause(), Cause::NotFound);
  }
  f.key = file("cert-as-key.pem", crx::read_file(f.cert), 0600);
  try {
    CertCredentials::from_files(f);
    FAIL();
  } catch (const crx::Error& e) {
    EXPECT_NE(std::string(e.what()).find("holds no unencrypted PEM private key"), std::string::npos)
        << e.what();
    EXPECT_EQ(e.cause(), Cause::Invalid);
  }
}

TEST_F(MigrateTlsCert, KeyFileMustBeOwnerOnlyLikeTheSharedKey) {
  auto f = good("sender", 11);
  ::chmod(f.key.c_str(), 0640);
  try {
    CertCredentials::from_files(f);
    FAIL() << "accepted a group-readable key";
  } catch (const crx::Error& e) {
    EXPECT_EQ(std::string(e.what()), "TLS key file " + f.key +
                                         " has mode 0640; it must be readable by its owner only "
                                         "(chmod 600 " + f.key + ")");
    EXPECT_EQ(e.cause(), Cause::Permission);
  }
  ::chmod(f.key.c_str(), 0400);
  EXPECT_NO_THROW(CertCredentials::from_files(f));
}

TEST_F(MigrateTlsCert, FilesThatHoldNoCertificateAreRefusedAtLoad) {
  auto f = good("sender", 11);
  auto empty = file("empty.pem", "not a certificate\n");
  auto g = f;
  g.ca = empty;
  try {
    CertCredentials::from_files(g);
    FAIL();
  } catch (const crx::Error& e) {
    EXPECT_EQ(std::string(e.what()), "TLS CA file " + empty + " holds no PEM certificate");
    EXPECT_EQ(e.cause(), Cause::Invalid);
  }
  g = f;
  g.cert = empty;
  try {
    CertCredentials::from_files(g);
    FAIL();
  } catch (const crx::Error& e) {
    EXPECT_EQ(std::string(e.what()), "TLS certificate file " + empty + " holds no PEM certificate");
    EXPECT_EQ(e.cause(), Cause::Invalid);
  }
}

// Certificates on one end, the shared key or clear text on the other:
// refused at the Hello, before any TLS, with one line on both sides.
TEST_F(MigrateTlsCert, CertificatesAgainstTheSharedKeyOrClearTextAreRefusedBothWays) {
  auto cert = CertCredentials::from_files(good("host", 10));
  auto key = SharedKey::from_bytes("0123456789abcdef-shared-test-key");
  for (WireSecurity other : {WireSecurity::Tls, WireSecurity::Plaintext}) {
    for (bool server_has_certs : {true, false}) {
      SCOPED_TRACE(std::string(crx::migrate::wire_security_name(other)) +
                   (server_has_certs ? " sender" : " receiver"));
      Credentials with_certs = certs(cert);
      Credentials without{other, &key, nullptr};
      Result r = server_has_certs ? handshake(with_certs, without) : handshake(without, with_certs);
      expect_one_line(r);
      EXPECT_EQ(r.server_cause, Cause::Invalid);
      EXPECT_EQ(r.client_cause, Cause::Peer);
      EXPECT_FALSE(r.client_encrypted);
      const char* remedy = other == WireSecurity::Tls
                               ? "configure --tls-cert, --tls-key and --tls-ca on both crx migrate "
                                 "and crx receive, or on neither"
                               : "use certificates (--tls-cert, --tls-key, --tls-ca) on both crx "
                                 "migrate and crx receive, or --insecure-plaintext on both";
      EXPECT_NE(r.server.find(remedy), std::string::npos) << r.server;
      EXPECT_NE(r.client.find(remedy), std::string::npos) << r.client;
      EXPECT_NE(r.server.find(server_has_certs ? "this receiver requires certificates (--tls-cert)"
                                               : "the sender at sender authenticates with "
                                                 "certificates (--tls-cert)"),
                std::string::npos)
          << r.server;
    }
  }
  // The shared-key pairs keep their words.
  Result r = handshake(Credentials{WireSecurity::Tls, &key, nullptr},
                       Credentials{WireSecurity::Plaintext, &key, nullptr});
  EXPECT_NE(r.server.find("pass --insecure-plaintext to both crx migrate and crx receive, or to "
                          "neither"),
            std::string::npos)
      << r.server;
}

// The clear-text Hello is the relay's to rewrite: a connection whose TLS
// identity (ALPN) names another session than its Hello is refused, so a
// relay cannot move an authenticated connection to another migration.
TEST_F(MigrateTlsCert, ARelayCannotMoveAConnectionToAnotherSession) {
  auto s = CertCredentials::from_files(good("receiver", 10));
  auto c = CertCredentials::from_files(good("sender", 11));
  int sv[2];
  ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
  FrameConn client(crx::UniqueFd(sv[0]), "receiver"), server(crx::UniqueFd(sv[1]), "sender");
  client.set_timeout(std::chrono::milliseconds(5000));
  server.set_timeout(std::chrono::milliseconds(5000));
  std::string server_error;
  Cause server_cause = Cause::Other;
  auto done = std::async(std::launch::async, [&] {
    try {
      crx::migrate::authenticate_as_server(server, certs(s));
    } catch (const crx::Error& e) {
      server_error = e.what();
      server_cause = e.cause();
    }
  });
  // What the relay forwards: a Hello for session "0ther", then the
  // sender's own TLS handshake for session "5e55".
  nlohmann::json hello = {{"version", 1}, {"channel", "pages"}, {"session", "0ther"},
                          {"security", "tls-cert"}};
  client.send(FrameType::Hello, hello.dump());
  client.expect(FrameType::StartTls);
  auto tls = std::make_unique<crx::migrate::TlsSession>(crx::migrate::TlsSession::Role::Client, c,
                                                        client.fd(), "receiver", false);
  tls->set_identity("crx-migrate-v1 pages 5e55");
  try {
    client.start_tls(std::move(tls));
  } catch (const crx::Error&) {
  }
  done.get();
  EXPECT_EQ(server_error, "the TLS identity of sender does not match its hello");
  EXPECT_EQ(server_cause, Cause::Permission);
}

}  // namespace
