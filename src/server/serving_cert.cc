#include "server/serving_cert.h"

#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include <boost/asio/ip/address.hpp>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>

#include "server/files.h"

namespace tessera::server {
namespace {

struct Free {
  void operator()(EVP_PKEY* p) const { EVP_PKEY_free(p); }
  void operator()(X509* p) const { X509_free(p); }
  void operator()(BIO* p) const { BIO_free(p); }
  void operator()(GENERAL_NAMES* p) const { GENERAL_NAMES_free(p); }
};
using Key = std::unique_ptr<EVP_PKEY, Free>;
using Cert = std::unique_ptr<X509, Free>;
using Bio = std::unique_ptr<BIO, Free>;

constexpr int64_t kCaDays = 3650;
constexpr int64_t kServingDays = 365;

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string Pem(X509* cert) {
  Bio bio(BIO_new(BIO_s_mem()));
  PEM_write_bio_X509(bio.get(), cert);
  char* data = nullptr;
  const long n = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<size_t>(n));
}

std::string Pem(EVP_PKEY* key) {
  Bio bio(BIO_new(BIO_s_mem()));
  PEM_write_bio_PrivateKey(bio.get(), key, nullptr, nullptr, 0, nullptr, nullptr);
  char* data = nullptr;
  const long n = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<size_t>(n));
}

Cert LoadCert(const std::string& path) {
  const std::string text = ReadAll(path);
  if (text.empty()) return nullptr;
  Bio bio(BIO_new_mem_buf(text.data(), static_cast<int>(text.size())));
  return Cert(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
}

Key LoadKey(const std::string& path) {
  const std::string text = ReadAll(path);
  if (text.empty()) return nullptr;
  Bio bio(BIO_new_mem_buf(text.data(), static_cast<int>(text.size())));
  return Key(PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr));
}

bool IsIpAddress(const std::string& host) {
  boost::system::error_code ec;
  boost::asio::ip::make_address(host, ec);
  return !ec;
}

bool AddExtension(X509* cert, X509* issuer, int nid, const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
  if (ext == nullptr) return false;
  const bool ok = X509_add_ext(cert, ext, -1) == 1;
  X509_EXTENSION_free(ext);
  return ok;
}

// A certificate for `key` named `cn`, valid from an hour ago for `days`, signed by `issuer_key`
// (self-signed when `issuer` is null).
Result<Cert> MakeCert(EVP_PKEY* key, const std::string& cn, int64_t days, X509* issuer,
                      EVP_PKEY* issuer_key, bool ca, const std::vector<std::string>& hosts) {
  Cert cert(X509_new());
  X509_set_version(cert.get(), 2);
  unsigned char serial[16];
  if (RAND_bytes(serial, sizeof serial) != 1) return Internal("no randomness for a serial");
  serial[0] &= 0x7f;
  BIGNUM* bn = BN_bin2bn(serial, sizeof serial, nullptr);
  BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(cert.get()));
  BN_free(bn);
  X509_gmtime_adj(X509_getm_notBefore(cert.get()), -3600);
  X509_gmtime_adj(X509_getm_notAfter(cert.get()), static_cast<long>(days * 86400));
  X509_set_pubkey(cert.get(), key);
  X509_NAME* name = X509_get_subject_name(cert.get());
  X509_NAME_add_entry_by_txt(name, "O", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>("tessera"), -1, -1, 0);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>(cn.c_str()), -1, -1, 0);
  X509_set_issuer_name(cert.get(), issuer ? X509_get_subject_name(issuer) : name);
  X509* signer = issuer ? issuer : cert.get();
  bool ok = AddExtension(cert.get(), signer, NID_subject_key_identifier, "hash") &&
            AddExtension(cert.get(), signer, NID_authority_key_identifier, "keyid:always");
  if (ca) {
    ok = ok && AddExtension(cert.get(), signer, NID_basic_constraints, "critical,CA:TRUE") &&
         AddExtension(cert.get(), signer, NID_key_usage, "critical,keyCertSign,cRLSign");
  } else {
    std::string san;
    for (const std::string& h : hosts) {
      san += (san.empty() ? "" : ",") + std::string(IsIpAddress(h) ? "IP:" : "DNS:") + h;
    }
    ok = ok && AddExtension(cert.get(), signer, NID_basic_constraints, "critical,CA:FALSE") &&
         AddExtension(cert.get(), signer, NID_key_usage, "critical,digitalSignature") &&
         AddExtension(cert.get(), signer, NID_ext_key_usage, "serverAuth") &&
         (san.empty() || AddExtension(cert.get(), signer, NID_subject_alt_name, san.c_str()));
  }
  if (!ok) return Internal("cannot add the certificate's extensions");
  if (X509_sign(cert.get(), issuer_key, EVP_sha256()) == 0) {
    return Internal("cannot sign the certificate");
  }
  return cert;
}

// Whether `cert` names every host and stays valid for another day.
bool Covers(X509* cert, const std::vector<std::string>& hosts) {
  if (X509_cmp_time(X509_get0_notAfter(cert), nullptr) <= 0) return false;
  time_t tomorrow = time(nullptr) + 86400;
  if (X509_cmp_time(X509_get0_notAfter(cert), &tomorrow) <= 0) return false;
  for (const std::string& h : hosts) {
    const int r = IsIpAddress(h) ? X509_check_ip_asc(cert, h.c_str(), 0)
                                 : X509_check_host(cert, h.c_str(), h.size(), 0, nullptr);
    if (r != 1) return false;
  }
  return true;
}

}  // namespace

Result<ServingCert> EnsureServingCert(const std::string& dir,
                                      const std::vector<std::string>& hosts) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  ServingCert out{dir + "/ca.crt", dir + "/server.crt", dir + "/server.key"};
  const std::string ca_key_file = dir + "/ca.key";
  Key ca_key = LoadKey(ca_key_file);
  Cert ca = LoadCert(out.ca_file);
  if (!ca_key || !ca || X509_check_private_key(ca.get(), ca_key.get()) != 1) {
    ca_key.reset(EVP_EC_gen("P-256"));
    if (!ca_key) return Internal("cannot make the CA's key");
    auto made = MakeCert(ca_key.get(), "tessera-ca", kCaDays, nullptr, ca_key.get(), true, {});
    if (!made.ok()) return made.status();
    ca = std::move(made).value();
    TESSERA_RETURN_IF_ERROR(WriteFileDurably(ca_key_file, Pem(ca_key.get()), 0600));
    TESSERA_RETURN_IF_ERROR(WriteFileDurably(out.ca_file, Pem(ca.get()), 0644));
  }
  Cert serving = LoadCert(out.cert_file);
  Key key = LoadKey(out.key_file);
  const bool reuse = serving && key && X509_check_private_key(serving.get(), key.get()) == 1 &&
                     X509_verify(serving.get(), X509_get0_pubkey(ca.get())) == 1 &&
                     Covers(serving.get(), hosts);
  if (reuse) return out;
  key.reset(EVP_EC_gen("P-256"));
  if (!key) return Internal("cannot make the serving key");
  auto made =
      MakeCert(key.get(), "tessera-server", kServingDays, ca.get(), ca_key.get(), false, hosts);
  if (!made.ok()) return made.status();
  TESSERA_RETURN_IF_ERROR(WriteFileDurably(out.key_file, Pem(key.get()), 0600));
  TESSERA_RETURN_IF_ERROR(WriteFileDurably(out.cert_file, Pem(made->get()), 0644));
  return out;
}

}  // namespace tessera::server
