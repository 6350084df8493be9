#include <gtest/gtest.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "cli/client.h"
#include "server/api_server.h"
#include "server/http_server.h"
#include "server/serving_cert.h"

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
  auto r = cli::Request(Endpoint(true, dir_ + "/cert.pem"), "GET", "/apis/tessera.io/v1/jobs");
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

TEST_F(TlsTest, JobLogsAreShippedByAgentsAndFollowedOverHttps) {
  cli::Endpoint admin = Endpoint(true, dir_ + "/cert.pem");
  auto job = cli::Request(admin, "POST", "/apis/tessera.io/v1/apply",
                          "apiVersion: v1\nkind: Pod\nmetadata: {name: train, namespace: team-a}\n"
                          "spec: {containers: [{name: worker}]}\n",
                          "application/yaml");
  ASSERT_TRUE(job.ok() && job->status == 200) << (job.ok() ? job->body : job.status().message());
  // The job's pods are bound to node n1, whose agent ships their output.
  auto bound = cli::Request(
      admin, "PUT", "/apis/tessera.io/v1/namespaces/team-a/jobs/train",
      nlohmann::json{
          {"apiVersion", "tessera.io/v1"},
          {"kind", "Job"},
          {"metadata", {{"name", "train"}, {"namespace", "team-a"}}},
          {"spec", nlohmann::json::parse(job->body)["items"][0]["spec"]},
          {"status",
           {{"phase", "Admitted"},
            {"pods",
             {{{"name", "worker-0"}, {"node", "n1"}}, {{"name", "worker-1"}, {"node", "n1"}}}}}}}
          .dump(),
      "application/json");
  ASSERT_TRUE(bound.ok() && bound->status == 200) << bound->body;
  auto agent_token = cli::Request(admin, "POST", "/apis/tessera.io/v1/tokens",
                                  R"({"role": "agent", "node": "n1"})");
  ASSERT_TRUE(agent_token.ok() && agent_token->status == 201);
  cli::Endpoint agent = admin;
  agent.token = nlohmann::json::parse(agent_token->body)["token"];
  auto team_token =
      cli::Request(admin, "POST", "/apis/tessera.io/v1/tokens", R"({"namespace": "team-a"})");
  cli::Endpoint team = admin;
  team.token = nlohmann::json::parse(team_token->body)["token"];
  const std::string logs = "/apis/tessera.io/v1/namespaces/team-a/jobs/train/logs";

  ASSERT_EQ(cli::Request(agent, "POST", logs + "?pod=worker-0", "epoch 1\n")->status, 200);
  EXPECT_EQ(cli::Request(team, "POST", logs + "?pod=worker-0", "forged\n")->status, 403);
  EXPECT_EQ(cli::Request(agent, "POST", logs, "no pod\n")->status, 400);
  // Not a pod bound to its node: refused.
  EXPECT_EQ(cli::Request(agent, "POST", logs + "?pod=worker-7", "forged\n")->status, 403);
  auto n2_token = cli::Request(admin, "POST", "/apis/tessera.io/v1/tokens",
                               R"({"role": "agent", "node": "n2"})");
  cli::Endpoint n2 = admin;
  n2.token = nlohmann::json::parse(n2_token->body)["token"];
  EXPECT_EQ(cli::Request(n2, "POST", logs + "?pod=worker-0", "forged\n")->status, 403);
  auto read = cli::Request(team, "GET", logs);
  ASSERT_EQ(read->status, 200);
  EXPECT_EQ(read->body, "epoch 1\n");
  EXPECT_EQ(
      cli::Request(team, "GET", "/apis/tessera.io/v1/namespaces/team-a/jobs/nope/logs")->status,
      404);

  // Following: what is there, then what the agent ships while the stream is open.
  std::string got;
  std::thread shipper([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    (void)cli::Request(agent, "POST", logs + "?pod=worker-0", "epoch 2\n");
  });
  std::string error;
  auto status = cli::RequestStream(
      team, logs + "?follow=1&timeoutSeconds=1", [&](std::string_view d) { got += d; }, &error);
  shipper.join();
  ASSERT_TRUE(status.ok()) << status.status().message();
  EXPECT_EQ(*status, 200) << error;
  EXPECT_EQ(got, "epoch 1\nepoch 2\n");

  // Two pods: lines are prefixed with their pod.
  ASSERT_EQ(cli::Request(agent, "POST", logs + "?pod=worker-1", "hello\n")->status, 200);
  EXPECT_EQ(cli::Request(team, "GET", logs + "?tailLines=1")->body,
            "[worker-0] epoch 2\n[worker-1] hello\n");
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

std::string FileText(const std::string& path) {
  std::ifstream in(path);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// The server's own CA: made once, trusted by clients, kept across restarts; the serving
// certificate is made again (by the same CA) when it must name another host.
TEST(ServingCert, MadeOnceTrustedByClientsAndRemadeForNewHosts) {
  char tmpl[] = "/tmp/tessera-ca-XXXXXX";
  ASSERT_NE(mkdtemp(tmpl), nullptr);
  const std::string dir = std::string(tmpl) + "/tls";
  auto first = EnsureServingCert(dir, {"127.0.0.1", "localhost"});
  ASSERT_TRUE(first.ok()) << first.status().message();
  EXPECT_EQ(std::filesystem::status(first->key_file).permissions() & std::filesystem::perms::all,
            std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  EXPECT_EQ(std::filesystem::status(dir + "/ca.key").permissions() & std::filesystem::perms::all,
            std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  const std::string ca = FileText(first->ca_file), cert = FileText(first->cert_file);

  // A client that trusts ca.crt reaches the server at 127.0.0.1.
  auto api = ApiServer::Open(std::string(tmpl) + "/data");
  ASSERT_TRUE(api.ok());
  HttpServerOptions o;
  o.tls_cert_file = first->cert_file;
  o.tls_key_file = first->key_file;
  auto srv = HttpServer::Start(o, [&](const HttpRequest& r) { return (*api)->Handle(r); });
  ASSERT_TRUE(srv.ok()) << srv.status().message();
  cli::Endpoint ep;
  ep.port = std::to_string((*srv)->port());
  ep.tls = true;
  ep.ca_file = first->ca_file;
  auto r = cli::Request(ep, "GET", "/version");
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->status, 200);
  (*srv)->Stop();

  // Same hosts: both reused. Another host: the CA stays, the serving certificate is new.
  auto again = EnsureServingCert(dir, {"127.0.0.1"});
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(FileText(again->ca_file), ca);
  EXPECT_EQ(FileText(again->cert_file), cert);
  auto more = EnsureServingCert(dir, {"127.0.0.1", "gpu-head.example"});
  ASSERT_TRUE(more.ok());
  EXPECT_EQ(FileText(more->ca_file), ca);
  EXPECT_NE(FileText(more->cert_file), cert);
  std::filesystem::remove_all(tmpl);
}

}  // namespace
}  // namespace tessera::server
