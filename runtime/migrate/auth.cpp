#include "migrate/auth.hpp"

#include <fcntl.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <sys/stat.h>

#include <cctype>
#include <cstdio>

#include <nlohmann/json.hpp>

#include "common/error.hpp"
#include "common/unique_fd.hpp"
#include "migrate/tls_session.hpp"

namespace crx::migrate {
namespace {

constexpr int kAuthVersion = 1;
constexpr size_t kNonceBytes = 32;
constexpr size_t kMinKeyBytes = 16;

std::string from_hex(std::string_view hex) {
  if (hex.size() % 2) throw Error("malformed hex string in handshake");
  std::string out;
  out.reserve(hex.size() / 2);
  auto val = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    throw Error("malformed hex string in handshake");
  };
  for (size_t i = 0; i < hex.size(); i += 2) {
    out.push_back(static_cast<char>(val(hex[i]) << 4 | val(hex[i + 1])));
  }
  return out;
}

std::string proof(const SharedKey& key, std::string_view role, const AuthPeer& p,
                  std::string_view first_nonce, std::string_view second_nonce) {
  std::string msg = "crx-migrate-v1|";
  msg += role;
  msg += '|' + p.channel + '|' + p.session + '|';
  msg += first_nonce;
  msg += '|';
  msg += second_nonce;
  return key.hmac(msg);
}

bool equal_secret(std::string_view a, std::string_view b) {
  return a.size() == b.size() && CRYPTO_memcmp(a.data(), b.data(), a.size()) == 0;
}

nlohmann::json parse(const Frame& f, const FrameConn& conn) {
  auto j = nlohmann::json::parse(f.payload, nullptr, false);
  if (!j.is_object()) {
    throw Error("malformed " + std::string(frame_type_name(f.type)) + " frame from " + conn.peer());
  }
  return j;
}

std::string field(const nlohmann::json& j, const char* name) {
  auto it = j.find(name);
  if (it == j.end() || !it->is_string()) throw Error(std::string("handshake lacks \"") + name + "\"");
  return it->get<std::string>();
}

// Restores the connection's frame limit when the handshake ends either way.
class HandshakeLimit {
 public:
  explicit HandshakeLimit(FrameConn& c) : conn_(c), saved_(c.max_frame()) {
    c.set_max_frame(kHandshakeMaxFrame);
  }
  ~HandshakeLimit() { conn_.set_max_frame(saved_); }

 private:
  FrameConn& conn_;
  size_t saved_;
};

// How an end authenticates, in a refusal.
const char* wire_words(WireSecurity w) {
  switch (w) {
    case WireSecurity::Tls: return "the shared key (--key)";
    case WireSecurity::TlsCert: return "certificates (--tls-cert)";
    case WireSecurity::Plaintext: break;
  }
  return "clear text (--insecure-plaintext)";
}

std::string cert_remedy(WireSecurity a, WireSecurity b) {
  if (a == WireSecurity::Plaintext || b == WireSecurity::Plaintext) {
    return "use certificates (--tls-cert, --tls-key, --tls-ca) on both crx migrate and crx "
           "receive, or --insecure-plaintext on both";
  }
  return "configure --tls-cert, --tls-key and --tls-ca on both crx migrate and crx receive, or on "
         "neither";
}

std::string mismatch_for_server(WireSecurity mine, WireSecurity theirs, const std::string& peer) {
  if (mine == WireSecurity::TlsCert || theirs == WireSecurity::TlsCert) {
    return "the sender at " + peer + " authenticates with " + wire_words(theirs) +
           " but this receiver requires " + wire_words(mine) + "; " + cert_remedy(mine, theirs);
  }
  if (mine == WireSecurity::Tls) {
    return "the sender at " + peer +
           " sends in clear text (--insecure-plaintext) but this receiver requires TLS; "
           "pass --insecure-plaintext to both crx migrate and crx receive, or to neither";
  }
  return "the sender at " + peer +
         " uses TLS but this receiver runs with --insecure-plaintext; pass "
         "--insecure-plaintext to both crx migrate and crx receive, or to neither";
}

std::string mismatch_for_client(WireSecurity server, WireSecurity client) {
  if (server == WireSecurity::TlsCert || client == WireSecurity::TlsCert) {
    return std::string("this receiver requires ") + wire_words(server) +
           " but the sender authenticates with " + wire_words(client) + "; " +
           cert_remedy(server, client);
  }
  if (server == WireSecurity::Tls) {
    return "this receiver requires TLS but the sender runs with --insecure-plaintext; pass "
           "--insecure-plaintext to both crx migrate and crx receive, or to neither";
  }
  return "this receiver runs with --insecure-plaintext but the sender uses TLS; pass "
         "--insecure-plaintext to both crx migrate and crx receive, or to neither";
}

std::string identity_of(std::string_view channel, std::string_view session) {
  return std::string(TlsSession::kIdentityPrefix) + " " + std::string(channel) + " " +
         std::string(session);
}

std::unique_ptr<TlsSession> make_session(TlsSession::Role role, const Credentials& c,
                                         const FrameConn& conn, bool kernel) {
  if (c.wire == WireSecurity::TlsCert)
    return std::make_unique<TlsSession>(role, *c.cert, conn.fd(), conn.peer(), kernel, c.cipher);
  return std::make_unique<TlsSession>(role, *c.key, conn.fd(), conn.peer(), kernel, c.cipher);
}

// TLS from here on; the server learns channel and session from the PSK
// identity or the ALPN protocol, which the handshake authenticated.
AuthPeer tls_as_server(FrameConn& conn, const Credentials& c, const AuthPeer& hello) {
  conn.send(FrameType::StartTls);
  conn.start_tls(make_session(TlsSession::Role::Server, c, conn, hello.channel == "pages"));
  const std::string& id = conn.tls()->identity();
  const size_t prefix = std::string(TlsSession::kIdentityPrefix).size() + 1;
  size_t sp = id.size() > prefix ? id.find(' ', prefix) : std::string::npos;
  AuthPeer peer;
  if (sp != std::string::npos) {
    peer.channel = id.substr(prefix, sp - prefix);
    peer.session = id.substr(sp + 1);
  }
  if (peer.channel != hello.channel || peer.session != hello.session) {
    throw Error("the TLS identity of " + conn.peer() + " does not match its hello",
                Cause::Permission);
  }
  // The client's certificate has been checked only now (TLS 1.3): say so
  // on the control connection before it sends the manifest. Not on the
  // page channel, whose first record after the handshake is CRIU's.
  if (c.wire == WireSecurity::TlsCert && peer.channel == "control") conn.send(FrameType::AuthOk);
  return peer;
}

void check_credentials(const Credentials& c) {
  if (c.wire == WireSecurity::TlsCert ? !c.cert : !c.key) {
    throw Error(std::string("migration: no ") +
                    (c.wire == WireSecurity::TlsCert ? "certificates" : "key") + " for " +
                    wire_security_name(c.wire),
                Cause::Invalid);
  }
}

}  // namespace

const char* wire_security_name(WireSecurity w) {
  switch (w) {
    case WireSecurity::Tls: return "tls";
    case WireSecurity::TlsCert: return "tls-cert";
    case WireSecurity::Plaintext: break;
  }
  return "plaintext";
}

std::string SharedKey::tls_psk() const {
  // HKDF (RFC 5869) with SHA-256: extract with a fixed salt, expand one block.
  SharedKey salt = from_bytes("crx-migrate-v1");
  std::string prk = salt.hmac(bytes_);
  std::string okm = from_bytes(prk).hmac(std::string("tls13 external psk") + '\x01');
  OPENSSL_cleanse(prk.data(), prk.size());
  return okm;
}

std::string to_hex(std::string_view bytes) {
  static const char digits[] = "0123456789abcdef";
  std::string out;
  out.reserve(bytes.size() * 2);
  for (unsigned char c : bytes) {
    out.push_back(digits[c >> 4]);
    out.push_back(digits[c & 15]);
  }
  return out;
}

std::string random_hex(size_t bytes) {
  std::string raw(bytes, '\0');
  if (RAND_bytes(reinterpret_cast<unsigned char*>(raw.data()), static_cast<int>(bytes)) != 1)
    throw Error("no random bytes from OpenSSL");
  return to_hex(raw);
}

std::string read_owner_only_file(const std::string& path, const std::string& what) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (!fd) throw_errno("open " + what + " " + path);
  struct stat st{};
  if (::fstat(fd.get(), &st) != 0) throw_errno("stat " + what + " " + path);
  if (!S_ISREG(st.st_mode)) throw Error(what + " " + path + " is not a regular file", Cause::Invalid);
  if (st.st_mode & 077) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    throw Error(what + " " + path + " has mode " + mode +
                    "; it must be readable by its owner only (chmod 600 " + path + ")",
                Cause::Permission);
  }
  std::string bytes;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(fd.get(), buf, sizeof buf)) > 0) bytes.append(buf, static_cast<size_t>(n));
  int err = errno;
  OPENSSL_cleanse(buf, sizeof buf);
  if (n < 0) throw_errno("read " + what + " " + path, err);
  return bytes;
}

SharedKey SharedKey::from_file(const std::string& path) {
  std::string bytes = read_owner_only_file(path, "key file");
  // Trailing whitespace (a newline from echo or an editor) is not key.
  bytes.erase(bytes.find_last_not_of(" \t\n\v\f\r") + 1);
  if (bytes.size() < kMinKeyBytes) {
    throw Error("key file " + path + " holds " + std::to_string(bytes.size()) +
                " bytes; at least " + std::to_string(kMinKeyBytes) +
                " are needed (e.g. head -c 32 /dev/urandom | base64 > " + path + ")");
  }
  SharedKey key = from_bytes(bytes);
  OPENSSL_cleanse(bytes.data(), bytes.size());
  return key;
}

SharedKey SharedKey::from_bytes(std::string bytes) {
  if (bytes.empty()) throw Error("empty migration key");
  SharedKey k;
  k.bytes_ = std::move(bytes);
  return k;
}

std::string SharedKey::hmac(std::string_view data) const {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (!HMAC(EVP_sha256(), bytes_.data(), static_cast<int>(bytes_.size()),
            reinterpret_cast<const unsigned char*>(data.data()), data.size(), out, &len))
    throw Error("HMAC-SHA256 failed in OpenSSL");
  return std::string(reinterpret_cast<char*>(out), len);
}

AuthPeer authenticate_as_server(FrameConn& conn, const SharedKey& key, WireSecurity wire) {
  return authenticate_as_server(conn, Credentials{wire, &key, nullptr});
}

AuthPeer authenticate_as_server(FrameConn& conn, const Credentials& creds) {
  check_credentials(creds);
  const WireSecurity wire = creds.wire;
  HandshakeLimit limit(conn);
  AuthPeer peer;
  std::string nonce_c, nonce_s;
  WireSecurity theirs = WireSecurity::Plaintext;
  try {
    Frame hello = conn.expect(FrameType::Hello);
    auto j = parse(hello, conn);
    // Not j.value("version", 0): a version of another JSON type would
    // throw nlohmann's type_error past the Error handling here.
    auto v = j.find("version");
    int64_t version = v != j.end() && v->is_number_integer() ? v->get<int64_t>() : 0;
    if (version != kAuthVersion) {
      throw Error("peer " + conn.peer() + " speaks migration protocol " +
                  std::to_string(version) + ", this crx speaks " + std::to_string(kAuthVersion));
    }
    // A Hello without "security" comes from a crx that knew only clear text.
    auto sec = j.find("security");
    if (sec != j.end() &&
        (!sec->is_string() || (*sec != "tls" && *sec != "plaintext" && *sec != "tls-cert")))
      throw Error("handshake names an unknown wire security");
    if (sec != j.end() && *sec == "tls") theirs = WireSecurity::Tls;
    if (sec != j.end() && *sec == "tls-cert") theirs = WireSecurity::TlsCert;
    if (theirs != wire) {
      conn.send_error_quietly(mismatch_for_client(wire, theirs));
      throw Error(mismatch_for_server(wire, theirs, conn.peer()), Cause::Invalid);
    }
    peer.channel = field(j, "channel");
    peer.session = field(j, "session");
    if (wire != WireSecurity::Plaintext) return tls_as_server(conn, creds, peer);
    nonce_c = from_hex(field(j, "nonce"));
    if (nonce_c.size() != kNonceBytes) throw Error("handshake nonce has the wrong size");
  } catch (const Error& e) {
    conn.send_error_quietly(e.what());
    throw;
  }
  nonce_s = random_hex(kNonceBytes);
  nonce_s = from_hex(nonce_s);
  const SharedKey& key = *creds.key;
  nlohmann::json challenge = {{"nonce", to_hex(nonce_s)},
                              {"proof", to_hex(proof(key, "server", peer, nonce_c, nonce_s))}};
  conn.send(FrameType::Challenge, challenge.dump());
  Frame resp = conn.expect(FrameType::Response);
  std::string got;
  try {
    got = from_hex(field(parse(resp, conn), "proof"));
  } catch (const Error& e) {
    conn.send_error_quietly(e.what());
    throw;
  }
  if (!equal_secret(got, proof(key, "client", peer, nonce_s, nonce_c))) {
    conn.send_error_quietly("authentication failed: the receiver does not accept this key");
    throw Error("authentication failed: " + conn.peer() +
                    " does not know the migration key (check the key file on both hosts)",
                Cause::Permission);
  }
  conn.send(FrameType::AuthOk);
  return peer;
}

void authenticate_as_client(FrameConn& conn, const SharedKey& key, std::string_view channel,
                            std::string_view session, WireSecurity wire) {
  authenticate_as_client(conn, Credentials{wire, &key, nullptr}, channel, session);
}

void authenticate_as_client(FrameConn& conn, const Credentials& creds, std::string_view channel,
                            std::string_view session) {
  check_credentials(creds);
  const WireSecurity wire = creds.wire;
  HandshakeLimit limit(conn);
  AuthPeer me{std::string(channel), std::string(session)};
  std::string nonce_c = from_hex(random_hex(kNonceBytes));
  nlohmann::json hello = {{"version", kAuthVersion},
                          {"channel", me.channel},
                          {"session", me.session},
                          {"security", wire_security_name(wire)}};
  if (wire == WireSecurity::Plaintext) hello["nonce"] = to_hex(nonce_c);
  conn.send(FrameType::Hello, hello.dump());
  if (wire != WireSecurity::Plaintext) {
    conn.expect(FrameType::StartTls);
    auto tls = make_session(TlsSession::Role::Client, creds, conn, me.channel == "pages");
    tls->set_identity(identity_of(me.channel, me.session));
    conn.start_tls(std::move(tls));
    // The receiver's word that it took our certificate (see auth.hpp); a
    // refusal arrives here as its TLS alert, said by TlsSession.
    if (wire == WireSecurity::TlsCert && me.channel == "control") conn.expect(FrameType::AuthOk);
    return;
  }
  const SharedKey& key = *creds.key;
  Frame ch = conn.expect(FrameType::Challenge);
  auto j = parse(ch, conn);
  std::string nonce_s = from_hex(field(j, "nonce"));
  std::string proof_s = from_hex(field(j, "proof"));
  if (nonce_s.size() != kNonceBytes ||
      !equal_secret(proof_s, proof(key, "server", me, nonce_c, nonce_s))) {
    conn.send_error_quietly("authentication failed: the sender does not accept this key");
    throw Error("authentication failed: the receiver at " + conn.peer() +
                    " does not know the migration key (check the key file on both hosts)",
                Cause::Permission);
  }
  nlohmann::json response = {{"proof", to_hex(proof(key, "client", me, nonce_s, nonce_c))}};
  conn.send(FrameType::Response, response.dump());
  try {
    conn.expect(FrameType::AuthOk);
  } catch (const Error& e) {
    // The server answers a well-formed Response (ours always is) with
    // AuthOk, or with an Error frame when the proof does not check out:
    // an Error frame here is the refusal. Anything else (time-out, closed
    // or corrupt link) is said as it is.
    if (e.cause() == Cause::Peer) {
      throw Error("authentication failed: the receiver at " + conn.peer() +
                      " refused our key (check the key file on both hosts)",
                  Cause::Permission);
    }
    throw Error("authentication failed: " + std::string(e.what()), e.cause(), e.sys_errno());
  }
}

}  // namespace crx::migrate
