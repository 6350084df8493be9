#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "cli/client.h"
#include "server/api_server.h"
#include "server/http_server.h"

namespace tessera::server {
namespace {

// Writes a self-signed certificate for 127.0.0.1 (usable as its own CA) and its key.
void WriteSelfSigned(const std::string& cert_path, const std::string& key_path) {
  EVP_PKEY* key = EVP_EC_gen("P-256");
  ASSERT_NE(key, nullptr);
  X509* x = X509_new();
  X509_set_version(x, 2);
  ASN1_INTEGER_set(X509_get_serialNumber(x), 1);
  X509_gmtime_adj(X509_getm_notBefore(x), -60);
  X509_gmtime_adj(X509_getm_notAfter(x), 3600);
  X509_set_pubkey(x, key);
  X509_NAME* name = X509_get_subject_name(x);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                             reinterpret_cast<const unsigned char*>("127.0.0.1"), -1, -1, 0);
  X509_set_issuer_name(x, name);
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, x, x, nullptr, nullptr, 0);
  for (auto [nid, value] : {std::pair{NID_subject_alt_name, "IP:127.0.0.1"},
                            std::pair{NID_basic_constraints, "critical,CA:TRUE"}}) {
    X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, &ctx, nid, value);
    ASSERT_NE(ext, nullptr);
    X509_add_ext(x, ext, -1);
    X509_EXTENSION_free(ext);
  }
  ASSERT_GT(X509_sign(x, key, EVP_sha256()), 0);
  FILE* c = std::fopen(cert_path.c_str(), "w");
  FILE* k = std::fopen(key_path.c_str(), "w");
  ASSERT_TRUE(c && k);
  PEM_write_X509(c, x);
  PEM_write_PrivateKey(k, key, nullptr, nullptr, 0, nullptr, nullptr);
  std::fclose(c);
  std::fclose(k);
  X509_free(x);
  EVP_PKEY_free(key);
}

class TlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/tessera-tls-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    WriteSelfSigned(dir_ + "/cert.pem", dir_ + "/key.pem");
    api_ = ApiServer::Open(dir_ + "/data").value();
    std::ifstream in(dir_ + "/data/admin.token");
    std::getline(in, token_);
    HttpServerOptions o;
    o.tls_cert_file = dir_ + "/cert.pem";
    o.tls_key_file = dir_ + "/key.pem";
    auto srv = HttpServer::Start(o, [this](const HttpRequest& r) { return api_->Handle(r); });
    ASSERT_TRUE(srv.ok()) << srv.status().message();
    http_ = std::move(srv).value();
  }
  void TearDown() override {
    if (http_) http_->Stop();
    http_.reset();
    api_.reset();
    std::filesystem::remove_all(dir_);
  }

  cli::Endpoint Endpoint(bool tls, std::string ca) {
    cli::Endpoint ep;
    ep.port = std::to_string(http_->port());
    ep.token = token_;
    ep.tls = tls;
    ep.ca_file = std::move(ca);
    return ep;
  }

  std::string dir_, token_;
  std::unique_ptr<ApiServer> api_;
  std::unique_ptr<HttpServer> http_;
};

TEST_F(TlsTest, ServesHttpsToClientsThatTrustItsCertificate) {
  auto r = cli::Request(Endpoint(true, dir_ + "/cert.pem"), "GET", "/api/v1/jobs");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->status, 200) << r->body;
}

TEST_F(TlsTest, ClientsThatDoNotTrustItOrSpeakPlainHttpFail) {
  auto untrusted = cli::Request(Endpoint(true, ""), "GET", "/healthz");
  ASSERT_FALSE(untrusted.ok());
  EXPECT_NE(untrusted.status().message().find("TLS"), std::string::npos)
      << untrusted.status().message();
  auto plain = cli::Request(Endpoint(false, ""), "GET", "/healthz");
  EXPECT_FALSE(plain.ok() && plain->status == 200);
}

TEST(TlsConfig, BothFilesAreNeededAndMustLoad) {
  HttpServerOptions o;
  o.tls_cert_file = "/nonexistent/cert.pem";
  EXPECT_FALSE(HttpServer::Start(o, [](const HttpRequest&) { return HttpResponse(); }).ok());
  o.tls_key_file = "/nonexistent/key.pem";
  auto r = HttpServer::Start(o, [](const HttpRequest&) { return HttpResponse(); });
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("TLS certificate"), std::string::npos);
}

}  // namespace
}  // namespace tessera::server
