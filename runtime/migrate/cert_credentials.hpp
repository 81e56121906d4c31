// X.509 credentials of one migration end: `--tls-cert FILE --tls-key FILE
// --tls-ca FILE [--tls-peer-name NAME]` (or migration.tls_*_file in
// /etc/crx/config.yaml), the alternative to the shared key file.
//
// Both ends present their certificate and verify the other's chain against
// the CA file (mutual authentication; TLS 1.3, see tls_session.hpp). What
// is trusted:
//   - every certificate in the CA file is a trust anchor (an intermediate
//     CA dedicated to migration works on its own: X509_V_FLAG_PARTIAL_CHAIN);
//     no system CA store is consulted;
//   - the peer's name is not checked unless a peer name is given: then the
//     peer's certificate must carry it as a DNS subjectAltName (or, without
//     DNS names, as its subject CN; an IP address is matched against the IP
//     subjectAltNames), as X509_check_host/X509_check_ip say;
//   - CRLs (PEM "X509 CRL" blocks) in the CA file are checked for the
//     peer's certificate (X509_V_FLAG_CRL_CHECK): with any CRL in the file,
//     every issuing CA needs one. Without a CRL, revoking means a new CA.
//   - OpenSSL's purpose check holds: a certificate with extendedKeyUsage
//     needs serverAuth to receive and clientAuth to send (both for a host
//     that does both); one without the extension passes.
#pragma once
#include <memory>
#include <string>

typedef struct ssl_st SSL;
typedef struct ssl_ctx_st SSL_CTX;

namespace crx::migrate {

class CertCredentials {
 public:
  struct Files {
    std::string cert;       // PEM: this host's certificate, then its chain (if any)
    std::string key;        // PEM: its private key, unencrypted, mode 0600/0400
    std::string ca;         // PEM: the CA certificate(s) that issue migration peers, CRLs
    std::string peer_name;  // "" = any certificate the CA issued
  };

  // Throws Error (Cause::NotFound for a missing file, Cause::Permission for
  // a key file others can read, Cause::Invalid for what does not parse or
  // a key that does not belong to the certificate), one line naming the
  // file.
  static CertCredentials from_files(const Files& files);

  // This end's certificate, key and chain, the CA store and the peer
  // verification (both ends require a certificate) on ctx; the peer name
  // on ssl. Throws Error when OpenSSL refuses them.
  void configure(SSL_CTX* ctx) const;
  void configure(SSL* ssl) const;

  const std::string& peer_name() const;
  // "CN=host-a" (the subject of this end's certificate), for messages.
  std::string subject() const;

 private:
  struct Impl;
  std::shared_ptr<const Impl> impl_;
};

}  // namespace crx::migrate
