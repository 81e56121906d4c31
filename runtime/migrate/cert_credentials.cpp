#include "migrate/cert_credentials.hpp"

#include <arpa/inet.h>
#include <openssl/bio.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>
#include <openssl/x509v3.h>

#include <fcntl.h>
#include <unistd.h>

#include <vector>

#include "common/error.hpp"
#include "common/unique_fd.hpp"
#include "migrate/auth.hpp"

namespace crx::migrate {

struct CertCredentials::Impl {
  X509* leaf = nullptr;
  std::vector<X509*> chain;
  EVP_PKEY* key = nullptr;
  X509_STORE* store = nullptr;
  std::string peer_name;
  ~Impl() {
    X509_free(leaf);
    for (X509* c : chain) X509_free(c);
    EVP_PKEY_free(key);
    X509_STORE_free(store);
  }
};

namespace {

struct BioFree {
  void operator()(BIO* b) const { BIO_free(b); }
};
using BioPtr = std::unique_ptr<BIO, BioFree>;

// A public file (certificate, CA): its errno named on failure.
std::string read_public(const std::string& path, const std::string& what) {
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd) throw_errno("open " + what + " " + path);
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = ::read(fd.get(), buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  if (n < 0) throw_errno("read " + what + " " + path);
  return out;
}

BioPtr mem_bio(const std::string& data) {
  BioPtr b(BIO_new_mem_buf(data.data(), static_cast<int>(data.size())));
  if (!b) throw Error("OpenSSL cannot make a memory BIO");
  return b;
}

int no_passphrase(char*, int, int, void*) { return 0; }

bool is_ip(const std::string& s) {
  unsigned char buf[16];
  return ::inet_pton(AF_INET, s.c_str(), buf) == 1 || ::inet_pton(AF_INET6, s.c_str(), buf) == 1;
}

std::string name_of(X509_NAME* n) {
  if (!n) return "";
  BioPtr b(BIO_new(BIO_s_mem()));
  if (!b) return "";
  X509_NAME_print_ex(b.get(), n, 0, XN_FLAG_ONELINE & ~ASN1_STRFLGS_ESC_MSB);
  char* p = nullptr;
  long len = BIO_get_mem_data(b.get(), &p);
  return std::string(p, static_cast<size_t>(len));
}

}  // namespace

CertCredentials CertCredentials::from_files(const Files& f) {
  auto impl = std::make_shared<Impl>();
  impl->peer_name = f.peer_name;
  ERR_clear_error();

  std::string pem = read_public(f.cert, "TLS certificate file");
  BioPtr cb = mem_bio(pem);
  while (X509* c = PEM_read_bio_X509(cb.get(), nullptr, no_passphrase, nullptr)) {
    if (!impl->leaf) {
      impl->leaf = c;
    } else {
      impl->chain.push_back(c);
    }
  }
  ERR_clear_error();  // the loop ends on "no start line"
  if (!impl->leaf) {
    throw Error("TLS certificate file " + f.cert + " holds no PEM certificate", Cause::Invalid);
  }

  std::string secret = read_owner_only_file(f.key, "TLS key file");
  {
    BioPtr kb = mem_bio(secret);
    impl->key = PEM_read_bio_PrivateKey(kb.get(), nullptr, no_passphrase, nullptr);
  }
  OPENSSL_cleanse(secret.data(), secret.size());
  ERR_clear_error();
  if (!impl->key) {
    throw Error("TLS key file " + f.key +
                    " holds no unencrypted PEM private key (crx takes no passphrase)",
                Cause::Invalid);
  }
  if (X509_check_private_key(impl->leaf, impl->key) != 1) {
    ERR_clear_error();
    throw Error("TLS key file " + f.key + " does not hold the private key of the certificate in " +
                    f.cert,
                Cause::Invalid);
  }

  std::string ca = read_public(f.ca, "TLS CA file");
  BioPtr ab = mem_bio(ca);
  STACK_OF(X509_INFO)* infos = PEM_X509_INFO_read_bio(ab.get(), nullptr, no_passphrase, nullptr);
  if (!infos) {
    ERR_clear_error();
    throw Error("TLS CA file " + f.ca + " does not parse as PEM", Cause::Invalid);
  }
  impl->store = X509_STORE_new();
  int anchors = 0, crls = 0;
  bool ok = impl->store != nullptr;
  for (int i = 0; ok && i < sk_X509_INFO_num(infos); ++i) {
    X509_INFO* info = sk_X509_INFO_value(infos, i);
    if (info->x509) {
      ok = X509_STORE_add_cert(impl->store, info->x509) == 1;
      ++anchors;
    }
    if (info->crl) {
      ok = ok && X509_STORE_add_crl(impl->store, info->crl) == 1;
      ++crls;
    }
  }
  sk_X509_INFO_pop_free(infos, X509_INFO_free);
  ERR_clear_error();
  if (!ok) throw Error("OpenSSL refused the CA certificates in " + f.ca, Cause::Invalid);
  if (anchors == 0) {
    throw Error("TLS CA file " + f.ca + " holds no PEM certificate", Cause::Invalid);
  }
  unsigned long flags = X509_V_FLAG_PARTIAL_CHAIN;
  if (crls > 0) flags |= X509_V_FLAG_CRL_CHECK;
  X509_STORE_set_flags(impl->store, flags);

  CertCredentials c;
  c.impl_ = std::move(impl);
  return c;
}

void CertCredentials::configure(SSL_CTX* ctx) const {
  const Impl& m = *impl_;
  bool ok = SSL_CTX_use_certificate(ctx, m.leaf) == 1 && SSL_CTX_use_PrivateKey(ctx, m.key) == 1 &&
            SSL_CTX_check_private_key(ctx) == 1;
  for (X509* c : m.chain) ok = ok && SSL_CTX_add1_chain_cert(ctx, c) == 1;
  ok = ok && SSL_CTX_set1_verify_cert_store(ctx, m.store) == 1;
  if (!ok) {
    ERR_clear_error();
    throw Error("OpenSSL refused this host's TLS certificate or key for migration", Cause::Invalid);
  }
  // Both ends: the peer must send a certificate that verifies.
  SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
}

void CertCredentials::configure(SSL* ssl) const {
  const std::string& name = impl_->peer_name;
  if (name.empty()) return;
  X509_VERIFY_PARAM* p = SSL_get0_param(ssl);
  bool ok;
  if (is_ip(name)) {
    ok = X509_VERIFY_PARAM_set1_ip_asc(p, name.c_str()) == 1;
  } else {
    X509_VERIFY_PARAM_set_hostflags(p, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
    ok = X509_VERIFY_PARAM_set1_host(p, name.c_str(), name.size()) == 1;
  }
  if (!ok) {
    ERR_clear_error();
    throw Error("TLS peer name \"" + name + "\" is not a host name or IP address", Cause::Invalid);
  }
}

const std::string& CertCredentials::peer_name() const { return impl_->peer_name; }

std::string CertCredentials::subject() const {
  return name_of(X509_get_subject_name(impl_->leaf));
}

}  // namespace crx::migrate
