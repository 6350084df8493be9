#include "server/api_server.h"

#include <gtest/gtest.h>
#include <sys/stat.h>

#include <array>
#include <atomic>
#include <boost/asio.hpp>
#include <boost/beast.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "api/queue_views.h"
#include "server/http_server.h"
#include "server/test_store.h"
#include "store/memory_store.h"

namespace tessera::server {
namespace {

namespace beast = boost::beast;
namespace http = beast::http;
using nlohmann::json;

struct Reply {
  int status = 0;
  json body;
  std::string raw;
};

// A real server on a free loopback port over a temporary data directory.
class ApiServerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/tessera-api-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    StartServer();
    std::ifstream in(dir_ + "/admin.token");
    std::getline(in, admin_);
    ASSERT_FALSE(admin_.empty());
  }
  void TearDown() override {
    StopServer();
    std::filesystem::remove_all(dir_);
  }

  void StartServer(size_t max_body = 1 << 20, ControlPlane::StoreOpener open_store = {}) {
    auto api = ApiServer::Open(dir_, open_store ? std::move(open_store) : store_);
    ASSERT_TRUE(api.ok()) << api.status().message();
    api_ = std::move(api).value();
    HttpServerOptions o;
    o.max_body_bytes = max_body;
    auto srv = HttpServer::Start(o, [this](const HttpRequest& r) { return api_->Handle(r); });
    ASSERT_TRUE(srv.ok()) << srv.status().message();
    http_ = std::move(srv).value();
  }
  void StopServer() {
    if (http_) http_->Stop();
    http_.reset();
    api_.reset();
  }

  Reply Call(http::verb method, const std::string& target, const std::string& token,
             const std::string& body = "", const std::string& content_type = "") {
    boost::asio::io_context io;
    beast::tcp_stream stream(io);
    stream.connect({boost::asio::ip::make_address("127.0.0.1"), http_->port()});
    http::request<http::string_body> req(method, target, 11);
    req.set(http::field::host, "127.0.0.1");
    if (!token.empty()) req.set(http::field::authorization, "Bearer " + token);
    if (!content_type.empty()) req.set(http::field::content_type, content_type);
    req.body() = body;
    req.prepare_payload();
    http::write(stream, req);
    beast::flat_buffer buf;
    http::response<http::string_body> res;
    http::read(stream, buf, res);
    Reply r;
    r.status = res.result_int();
    r.raw = res.body();
    r.body = json::parse(r.raw, nullptr, false);
    return r;
  }
  Reply Get(const std::string& t, const std::string& tok) { return Call(http::verb::get, t, tok); }
  Reply Post(const std::string& t, const std::string& tok, const json& b) {
    return Call(http::verb::post, t, tok, b.dump());
  }

  // GET `path` as the admin asking for a meta.k8s.io/v1 Table, as kubectl get does.
  json Table(const std::string& path) {
    HttpRequest req;
    req.method = "GET";
    req.path = path;
    req.authorization = "Bearer " + admin_;
    req.accept = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json";
    return json::parse(api_->Handle(req).body);
  }

  std::string dir_, admin_;
  ControlPlane::StoreOpener store_ = TestStore();  // the same state at every start of a test
  std::unique_ptr<ApiServer> api_;
  std::unique_ptr<HttpServer> http_;
};

json JobObj(const std::string& ns, const std::string& name, json labels = json::object()) {
  return {
      {"apiVersion", "tessera.io/v1"},
      {"kind", "Job"},
      {"metadata", {{"name", name}, {"namespace", ns}, {"labels", labels}}},
      {"spec",
       {{"tasks", {{{"name", "main"}, {"resources", {{"limits", {{"nvidia.com/gpu", 1}}}}}}}}}}};
}

const std::string kJobs = "/apis/tessera.io/v1/namespaces/team-a/jobs";

// A watch over a raw connection: the request, then chunked events as they arrive.
class WatchClient {
 public:
  WatchClient(uint16_t port, const std::string& target, const std::string& token) : socket_(io_) {
    socket_.connect({boost::asio::ip::make_address("127.0.0.1"), port});
    const std::string req =
        "GET " + target + " HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer " + token + "\r\n\r\n";
    boost::asio::write(socket_, boost::asio::buffer(req));
  }

  // The HTTP status, once the header has arrived.
  int Status() {
    while (header_end_ == std::string::npos && Fill()) {
    }
    return header_end_ == std::string::npos ? 0 : std::stoi(raw_.substr(9, 3));
  }

  // Reads until `n` events have arrived or `ms` pass; returns the events so far.
  std::vector<json> Events(size_t n, int ms = 3000) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
    while (Parse(), events_.size() < n && !ended_ && std::chrono::steady_clock::now() < deadline) {
      if (!Fill(deadline)) break;
    }
    return events_;
  }
  bool ended() const { return ended_; }

 private:
  // Reads more bytes (until `deadline`); false on timeout or close.
  bool Fill(std::chrono::steady_clock::time_point deadline = std::chrono::steady_clock::now() +
                                                             std::chrono::seconds(3)) {
    std::array<char, 4096> buf;
    bool got = false, done = false;
    socket_.async_read_some(boost::asio::buffer(buf), [&](beast::error_code ec, size_t n) {
      done = true;
      if (!ec) {
        raw_.append(buf.data(), n);
        got = true;
      }
    });
    io_.restart();
    io_.run_until(deadline);
    if (!done) {
      socket_.cancel();
      io_.restart();
      io_.run();
    }
    if (header_end_ == std::string::npos) header_end_ = raw_.find("\r\n\r\n");
    return got;
  }

  void Parse() {
    if (header_end_ == std::string::npos) return;
    size_t pos = header_end_ + 4 + consumed_;
    while (true) {
      const size_t eol = raw_.find("\r\n", pos);
      if (eol == std::string::npos) return;
      const size_t len = std::stoul(raw_.substr(pos, eol - pos), nullptr, 16);
      if (len == 0) {
        ended_ = true;
        return;
      }
      if (raw_.size() < eol + 2 + len + 2) return;
      lines_ += raw_.substr(eol + 2, len);
      pos = eol + 2 + len + 2;
      consumed_ = pos - header_end_ - 4;
      size_t nl;
      while ((nl = lines_.find('\n')) != std::string::npos) {
        events_.push_back(json::parse(lines_.substr(0, nl)));
        lines_.erase(0, nl + 1);
      }
    }
  }

  boost::asio::io_context io_;
  boost::asio::ip::tcp::socket socket_;
  std::string raw_, lines_;
  size_t header_end_ = std::string::npos, consumed_ = 0;
  std::vector<json> events_;
  bool ended_ = false;
};

// The store fails (a full disk, a lost leader): the write is answered 500 with the store's
// error, nothing of it is kept or served, and the server goes on once the store does.
TEST_F(ApiServerTest, AFailingStoreFailsTheRequestAndNothingElse) {
  StopServer();
  store::MemoryStore* mem = nullptr;
  StartServer(1 << 20, [&mem](const std::string&) -> Result<std::unique_ptr<store::Store>> {
    auto s = std::make_unique<store::MemoryStore>();
    mem = s.get();
    return std::unique_ptr<store::Store>(std::move(s));
  });
  ASSERT_NE(mem, nullptr);
  std::ifstream in(dir_ + "/admin.token");
  std::getline(in, admin_);
  const std::string kJobs = "/apis/tessera.io/v1/namespaces/team-a/jobs";
  mem->FailCommits(1, Internal("store commit: database or disk is full"));
  Reply failed = Post(kJobs, admin_, JobObj("team-a", "j"));
  EXPECT_EQ(failed.status, 500) << failed.raw;
  EXPECT_NE(failed.raw.find("disk is full"), std::string::npos) << failed.raw;
  EXPECT_EQ(Get(kJobs + "/j", admin_).status, 404);
  Reply ok = Post(kJobs, admin_, JobObj("team-a", "j"));
  EXPECT_EQ(ok.status, 201) << ok.raw;
  EXPECT_EQ(Get(kJobs + "/j", admin_).status, 200);
}

TEST_F(ApiServerTest, HealthNeedsNoTokenEverythingElseDoes) {
  EXPECT_EQ(Get("/healthz", "").status, 200);
  EXPECT_EQ(Get("/readyz", "").status, 200);
  Reply none = Get("/apis/tessera.io/v1/jobs", "");
  EXPECT_EQ(none.status, 401);
  EXPECT_EQ(none.body["reason"], "Unauthorized");
  EXPECT_EQ(Get("/apis/tessera.io/v1/jobs", "admin.0000").status, 401);
  EXPECT_EQ(Get("/apis/tessera.io/v1/jobs", admin_ + "x").status, 401);
  EXPECT_EQ(Get("/apis/tessera.io/v1/jobs", admin_).status, 200);
  struct stat st;
  ASSERT_EQ(stat((dir_ + "/admin.token").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600);
}

TEST_F(ApiServerTest, OneServerOwnsADataDirectory) {
  auto second = ApiServer::Open(dir_);
  ASSERT_FALSE(second.ok());
  EXPECT_NE(second.status().message().find("in use by another server"), std::string::npos)
      << second.status().message();
  StopServer();
  auto after = ApiServer::Open(dir_);  // released with the first
  EXPECT_TRUE(after.ok()) << after.status().message();
}

TEST_F(ApiServerTest, CreateGetReplaceDeleteWithResourceVersions) {
  Reply c = Post(kJobs, admin_, JobObj("team-a", "train"));
  ASSERT_EQ(c.status, 201) << c.raw;
  const std::string rv = c.body["metadata"]["resourceVersion"];
  EXPECT_EQ(Post(kJobs, admin_, JobObj("team-a", "train")).status, 409);
  Reply g = Get(kJobs + "/train", admin_);
  ASSERT_EQ(g.status, 200);
  EXPECT_EQ(g.body["metadata"]["resourceVersion"], rv);

  json update = JobObj("team-a", "train", {{"v", "2"}});
  update["metadata"]["resourceVersion"] = rv;
  Reply u = Call(http::verb::put, kJobs + "/train", admin_, update.dump());
  ASSERT_EQ(u.status, 200) << u.raw;
  EXPECT_NE(u.body["metadata"]["resourceVersion"], rv);
  // The same update again is based on a stale version now.
  Reply stale = Call(http::verb::put, kJobs + "/train", admin_, update.dump());
  EXPECT_EQ(stale.status, 409);
  EXPECT_EQ(stale.body["reason"], "Conflict");

  EXPECT_EQ(Call(http::verb::delete_, kJobs + "/train", admin_).status, 200);
  EXPECT_EQ(Get(kJobs + "/train", admin_).status, 404);
  EXPECT_EQ(Call(http::verb::delete_, kJobs + "/train", admin_).status, 404);
}

// Tessera's own kinds go through the REST stages of every served kind (KubeServe), so they
// answer as kube-apiserver does: dry runs, deletecollection with selectors, propagation policy
// and its messages (Kubernetes' test/cmd delete.sh and the registry's dryRun tests).
TEST_F(ApiServerTest, TesseraKindsGoThroughTheSameRestStages) {
  Reply dry = Post(kJobs + "?dryRun=All", admin_, JobObj("team-a", "dry"));
  ASSERT_EQ(dry.status, 201) << dry.raw;
  EXPECT_EQ(dry.body["metadata"]["name"], "dry");
  Reply missing = Get(kJobs + "/dry", admin_);
  EXPECT_EQ(missing.status, 404);
  EXPECT_EQ(missing.body["message"], "jobs.tessera.io \"dry\" not found") << missing.raw;

  for (const auto& [name, team] : {std::pair{"a", "x"}, {"b", "x"}, {"c", "y"}}) {
    ASSERT_EQ(Post(kJobs, admin_, JobObj("team-a", name, {{"team", team}})).status, 201);
  }
  Reply orphan = Call(http::verb::delete_, kJobs + "/c?propagationPolicy=Orphan", admin_);
  EXPECT_EQ(orphan.status, 400);
  EXPECT_NE(orphan.raw.find("propagationPolicy"), std::string::npos) << orphan.raw;
  EXPECT_EQ(Call(http::verb::delete_, kJobs + "/c?dryRun=All", admin_).status, 200);
  EXPECT_EQ(Get(kJobs + "/c", admin_).status, 200);

  Reply gone = Call(http::verb::delete_, kJobs + "?labelSelector=team%3Dx", admin_);
  ASSERT_EQ(gone.status, 200) << gone.raw;
  EXPECT_EQ(gone.body["kind"], "JobList");
  ASSERT_EQ(gone.body["items"].size(), 2u);
  EXPECT_EQ(gone.body["items"][0]["metadata"]["name"], "a");
  EXPECT_EQ(gone.body["items"][1]["metadata"]["name"], "b");
  Reply left = Get(kJobs, admin_);
  ASSERT_EQ(left.body["items"].size(), 1u) << left.raw;
  EXPECT_EQ(left.body["items"][0]["metadata"]["name"], "c");
  // Another namespace's token deletes nothing here, one object or a collection, nor across all
  // namespaces.
  Reply t = Post("/apis/tessera.io/v1/tokens", admin_, {{"namespace", "team-b"}});
  ASSERT_EQ(t.status, 201) << t.raw;
  const std::string team_b = t.body["token"];
  EXPECT_EQ(Call(http::verb::delete_, kJobs, team_b).status, 403);
  EXPECT_EQ(Call(http::verb::delete_, kJobs + "/c", team_b).status, 403);
  EXPECT_EQ(Call(http::verb::delete_, "/apis/tessera.io/v1/jobs", team_b).status, 403);
  EXPECT_EQ(Get(kJobs + "/c", admin_).status, 200);
}

TEST_F(ApiServerTest, ApplyIsIdempotentAndAllOrNothing) {
  json list = {{"items", {JobObj("team-a", "a"), JobObj("team-a", "b")}}};
  Reply first = Post("/apis/tessera.io/v1/apply", admin_, list);
  ASSERT_EQ(first.status, 200) << first.raw;
  Reply again = Post("/apis/tessera.io/v1/apply", admin_, list);
  ASSERT_EQ(again.status, 200);
  EXPECT_EQ(first.body["items"], again.body["items"]);  // same resourceVersions

  // The second object is invalid: nothing of the apply is written.
  json bad = {{"items", {JobObj("team-a", "c"), JobObj("team-a", "Bad_Name")}}};
  Reply r = Post("/apis/tessera.io/v1/apply", admin_, bad);
  EXPECT_EQ(r.status, 400);
  EXPECT_NE(
      r.body["message"].get<std::string>().find("items[1] (Job team-a/Bad_Name): metadata.name"),
      std::string::npos)
      << r.raw;
  EXPECT_EQ(Get(kJobs + "/c", admin_).status, 404);
  // A stale version in the second object: the first is not written either.
  json stale_second = JobObj("team-a", "b");
  stale_second["metadata"]["resourceVersion"] = "1";
  Reply s =
      Post("/apis/tessera.io/v1/apply", admin_, {{"items", {JobObj("team-a", "d"), stale_second}}});
  EXPECT_EQ(s.status, 409);
  EXPECT_EQ(Get(kJobs + "/d", admin_).status, 404);
}

// More objects than one etcd transaction holds (128 keys): on SQLite one transaction; on etcd
// transactions of at most 100 writes, in order, and the reply says the apply was not one.
TEST_F(ApiServerTest, AnApplyLargerThanOneEtcdTransactionIsWrittenWhole) {
  json items = json::array();
  for (int i = 0; i < 300; ++i) items.push_back(JobObj("team-a", "j" + std::to_string(i)));
  Reply r = Post("/apis/tessera.io/v1/apply", admin_, {{"items", items}});
  ASSERT_EQ(r.status, 200) << r.raw.substr(0, 300);
  ASSERT_EQ(r.body["items"].size(), 300u);
  EXPECT_EQ(Get(kJobs, admin_).body["items"].size(), 300u);
  const std::string warnings = r.body.value("warnings", json::array()).dump();
  if (TestsOnEtcd()) {
    EXPECT_NE(warnings.find("went in 3 transactions"), std::string::npos) << warnings;
  } else {
    EXPECT_EQ(warnings.find("transactions"), std::string::npos) << warnings;
  }
  // Applied again: nothing changes, in as many transactions.
  Reply again = Post("/apis/tessera.io/v1/apply", admin_, {{"items", items}});
  ASSERT_EQ(again.status, 200);
  EXPECT_EQ(again.body["items"], r.body["items"]);
}

TEST_F(ApiServerTest, ListsFilterByNamespaceAndLabels) {
  ASSERT_EQ(Post("/apis/tessera.io/v1/apply", admin_,
                 {{"items",
                   {JobObj("team-a", "a1", {{"tier", "gold"}}), JobObj("team-a", "a2"),
                    JobObj("team-b", "b1", {{"tier", "gold"}})}}})
                .status,
            200);
  EXPECT_EQ(Get("/apis/tessera.io/v1/jobs", admin_).body["items"].size(), 3u);
  EXPECT_EQ(Get(kJobs, admin_).body["items"].size(), 2u);
  Reply gold = Get("/apis/tessera.io/v1/jobs?labelSelector=tier%3Dgold", admin_);
  ASSERT_EQ(gold.body["items"].size(), 2u);
  EXPECT_EQ(Get("/apis/tessera.io/v1/jobs?labelSelector=!tier", admin_).body["items"].size(), 1u);
  EXPECT_EQ(Get("/apis/tessera.io/v1/jobs?labelSelector=tier!%3Dgold", admin_).body["items"].size(),
            1u);
  EXPECT_EQ(Get("/apis/tessera.io/v1/jobs?labelSelector=%3D%3D", admin_).status, 400);
}

TEST_F(ApiServerTest, NamespaceTokensSeeOnlyTheirNamespace) {
  Reply t = Post("/apis/tessera.io/v1/tokens", admin_, {{"namespace", "team-a"}});
  ASSERT_EQ(t.status, 201) << t.raw;
  const std::string team_a = t.body["token"];
  // Allowed: its own namespace.
  EXPECT_EQ(Post(kJobs, team_a, JobObj("team-a", "mine")).status, 201);
  EXPECT_EQ(Get(kJobs, team_a).status, 200);
  // Forbidden: another namespace, all namespaces, cluster-scoped kinds, applying elsewhere,
  // making tokens.
  EXPECT_EQ(Get("/apis/tessera.io/v1/namespaces/team-b/jobs", team_a).status, 403);
  EXPECT_EQ(
      Post("/apis/tessera.io/v1/namespaces/team-b/jobs", team_a, JobObj("team-b", "x")).status,
      403);
  EXPECT_EQ(Get("/apis/tessera.io/v1/jobs", team_a).status, 403);
  EXPECT_EQ(Get("/apis/tessera.io/v1/queues", team_a).status, 403);
  EXPECT_EQ(Post("/apis/tessera.io/v1/apply", team_a, JobObj("team-b", "x")).status, 403);
  EXPECT_EQ(Post("/apis/tessera.io/v1/tokens", team_a, {{"namespace", "team-a"}}).status, 403);
  EXPECT_EQ(Get("/apis/tessera.io/v1/namespaces/team-b/jobs/x", admin_).status, 404);
}

TEST_F(ApiServerTest, BadInputGets4xxNamingTheFieldAndWritesNothing) {
  struct Case {
    std::string body;
    int status;
    std::string message;
  };
  json deep = json::object();
  for (int i = 0; i < 40; ++i) deep = {{"x", deep}};
  json wrong_ns = JobObj("team-b", "j");
  json no_ns = JobObj("team-a", "j");
  no_ns["metadata"].erase("namespace");
  json bad_label = JobObj("team-a", "j", {{"tier", "not ok!"}});
  json bad_rv = JobObj("team-a", "j");
  bad_rv["metadata"]["resourceVersion"] = "-3";
  json spec_list = JobObj("team-a", "j");
  spec_list["spec"] = json::array();
  json api_v = JobObj("team-a", "j");
  api_v["apiVersion"] = "batch/v1";
  json kind = JobObj("team-a", "j");
  kind["kind"] = "Deployment";
  json meta_field = JobObj("team-a", "j");
  meta_field["metadata"]["owner"] = "me";
  auto with_gpu = [](json gpus) {
    json j = JobObj("team-a", "j");
    j["spec"]["tasks"][0]["resources"]["limits"]["nvidia.com/gpu"] = gpus;
    return j;
  };
  json spec_field = JobObj("team-a", "j");
  spec_field["spec"]["replicas"] = 3;
  json gang = JobObj("team-a", "j");
  gang["spec"]["minMember"] = 5;
  const std::vector<Case> cases = {
      {with_gpu("-2").dump(), 400,
       "spec.tasks[0].resources.limits.nvidia.com/gpu: must be a positive integer, got \"-2\""},
      {with_gpu("1.5").dump(), 400, "spec.tasks[0].resources.limits.nvidia.com/gpu"},
      {with_gpu(100000).dump(), 400, "is absurd"},
      {spec_field.dump(), 400, "spec.replicas: unknown field"},
      {gang.dump(), 400, "spec.minMember: is 5, more than the job's 1 pods"},
      {"{\"apiVersion\": ", 400, "malformed JSON"},
      {"[1, 2]", 400, "body: must be a JSON object"},
      {deep.dump(), 400, "nested deeper than 32"},
      {wrong_ns.dump(), 400, "metadata.namespace: \"team-b\" does not match"},
      {no_ns.dump(), 400, "metadata.namespace: must be set"},
      {bad_label.dump(), 400, "metadata.labels.tier: invalid label value"},
      {bad_rv.dump(), 400, "metadata.resourceVersion: must be a string of digits"},
      {spec_list.dump(), 400, "spec: must be an object"},
      {api_v.dump(), 400, "apiVersion: must be tessera.io/v1"},
      {kind.dump(), 400, "kind: unknown kind \"Deployment\""},
      {meta_field.dump(), 400, "metadata.owner: unknown field"},
  };
  const int64_t before = api_->plane().store().Revision();
  for (const Case& c : cases) {
    Reply r = Call(http::verb::post, kJobs, admin_, c.body);
    EXPECT_EQ(r.status, c.status) << c.body.substr(0, 80);
    EXPECT_NE(r.body.value("message", "").find(c.message), std::string::npos) << r.raw;
  }
  EXPECT_EQ(api_->plane().store().Revision(), before);
  EXPECT_EQ(Get("/apis/tessera.io/v1/nothings", admin_).status, 404);
  EXPECT_EQ(Get("/apis/tessera.io/v1/namespaces/Team_A/jobs", admin_).status, 400);
  EXPECT_EQ(Call(http::verb::patch, kJobs + "/j", admin_, "{}").status, 415);
  EXPECT_EQ(
      Call(http::verb::patch, kJobs + "/j", admin_, "{}", "application/merge-patch+json").status,
      404);
  EXPECT_EQ(Call(http::verb::patch, kJobs, admin_, "{}", "application/merge-patch+json").status,
            405);
}

TEST_F(ApiServerTest, OversizedBodiesAreRefused) {
  StopServer();
  StartServer(/*max_body=*/1024);
  json big = JobObj("team-a", "big", {{"pad", "x"}});
  big["metadata"]["annotations"] = {{"blob", std::string(4096, 'a')}};
  Reply r = Call(http::verb::post, kJobs, admin_, big.dump());
  EXPECT_EQ(r.status, 413);
  EXPECT_EQ(Get(kJobs + "/big", admin_).status, 404);
}

TEST_F(ApiServerTest, AppliesEverySeedManifest) {
  // Every seed example is accepted as YAML, except the Prometheus rules, which are refused
  // with what to do instead; what was applied reads back with its meaning.
  for (const auto& entry : std::filesystem::directory_iterator(TESSERA_TEST_DATA_DIR "/seeds")) {
    std::ifstream in(entry.path());
    std::stringstream text;
    text << in.rdbuf();
    Reply r =
        Call(http::verb::post, "/apis/tessera.io/v1/apply", admin_, text.str(), "application/yaml");
    const std::string file = entry.path().filename();
    if (file.starts_with("10-")) {
      EXPECT_EQ(r.status, 400) << file;
      EXPECT_NE(r.body.value("message", "").find("Prometheus"), std::string::npos) << r.raw;
    } else {
      EXPECT_EQ(r.status, 200) << file << ": " << r.raw;
    }
  }
  Reply gang = Get("/apis/tessera.io/v1/namespaces/default/jobs/pytorch-distributed", admin_);
  ASSERT_EQ(gang.status, 200);
  EXPECT_EQ(gang.body["spec"]["minMember"], 4);
  EXPECT_EQ(gang.body["spec"]["tasks"][0]["replicas"], 4);
  EXPECT_EQ(gang.body["spec"]["tasks"][0]["resources"]["limits"]["nvidia.com/gpu"], 8);
  Reply quota = Get("/apis/tessera.io/v1/namespaces/team-a/namespacequotas/gpu-quota", admin_);
  ASSERT_EQ(quota.status, 200);
  EXPECT_EQ(quota.body["spec"]["hard"]["requests.nvidia.com/gpu"], 16);
  EXPECT_EQ(Get("/apis/tessera.io/v1/queues/gpu-cluster-queue", admin_).status, 200);
  EXPECT_EQ(Get("/apis/tessera.io/v1/priorityclasses", admin_).body["items"].size(), 3u);
  EXPECT_EQ(Get("/apis/tessera.io/v1/gpusharingconfigs", admin_).body["items"].size(), 3u);
  EXPECT_EQ(Get("/apis/tessera.io/v1/podgroups", admin_).body["items"].size(), 1u);
}

TEST_F(ApiServerTest, WatchStreamsChangesOfOneKindAndNamespace) {
  ASSERT_EQ(Post(kJobs, admin_, JobObj("team-a", "before")).status, 201);
  WatchClient w(http_->port(), kJobs + "?watch=1", admin_);
  ASSERT_EQ(w.Status(), 200);
  // The current state first, as ADDED.
  auto ev = w.Events(1);
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0]["type"], "ADDED");
  EXPECT_EQ(ev[0]["object"]["metadata"]["name"], "before");
  // Then changes: another namespace and another kind are not this watch's business.
  ASSERT_EQ(
      Post("/apis/tessera.io/v1/namespaces/team-b/jobs", admin_, JobObj("team-b", "other")).status,
      201);
  ASSERT_EQ(Post("/apis/tessera.io/v1/apply", admin_,
                 json{{"apiVersion", "tessera.io/v1"},
                      {"kind", "Queue"},
                      {"metadata", {{"name", "q"}}},
                      {"spec", json::object()}})
                .status,
            200);
  Reply c = Post(kJobs, admin_, JobObj("team-a", "new"));
  ASSERT_EQ(c.status, 201);
  json update = JobObj("team-a", "new", {{"v", "2"}});
  ASSERT_EQ(Call(http::verb::put, kJobs + "/new", admin_, update.dump()).status, 200);
  ASSERT_EQ(Call(http::verb::delete_, kJobs + "/new", admin_).status, 200);
  ev = w.Events(4);
  ASSERT_EQ(ev.size(), 4u);
  EXPECT_EQ(ev[1]["type"], "ADDED");
  EXPECT_EQ(ev[1]["object"]["metadata"]["name"], "new");
  EXPECT_EQ(ev[1]["object"]["metadata"]["resourceVersion"], c.body["metadata"]["resourceVersion"]);
  EXPECT_EQ(ev[2]["type"], "MODIFIED");
  EXPECT_EQ(ev[2]["object"]["metadata"]["labels"]["v"], "2");
  EXPECT_EQ(ev[3]["type"], "DELETED");
  EXPECT_EQ(ev[3]["object"]["metadata"]["name"], "new");
}

TEST_F(ApiServerTest, WatchResumesFromAResourceVersionAndFilters) {
  Reply a = Post(kJobs, admin_, JobObj("team-a", "a", {{"tier", "gold"}}));
  ASSERT_EQ(Post(kJobs, admin_, JobObj("team-a", "b")).status, 201);
  ASSERT_EQ(Post(kJobs, admin_, JobObj("team-a", "c", {{"tier", "gold"}})).status, 201);
  const std::string rv = a.body["metadata"]["resourceVersion"];
  // From a's version: b and c, not a; with the selector, c only.
  WatchClient all(http_->port(), "/apis/tessera.io/v1/jobs?watch=true&resourceVersion=" + rv,
                  admin_);
  auto ev = all.Events(2);
  ASSERT_EQ(ev.size(), 2u);
  EXPECT_EQ(ev[0]["object"]["metadata"]["name"], "b");
  EXPECT_EQ(ev[1]["object"]["metadata"]["name"], "c");
  WatchClient gold(
      http_->port(),
      "/apis/tessera.io/v1/jobs?watch=1&labelSelector=tier%3Dgold&resourceVersion=" + rv, admin_);
  ev = gold.Events(2, 500);
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0]["object"]["metadata"]["name"], "c");
  // A version from the future is refused; a namespace token watches only its namespace.
  EXPECT_EQ(Get("/apis/tessera.io/v1/jobs?watch=1&resourceVersion=999999", admin_).status, 400);
  Reply t = Post("/apis/tessera.io/v1/tokens", admin_, {{"namespace", "team-a"}});
  EXPECT_EQ(Get("/apis/tessera.io/v1/namespaces/team-b/jobs?watch=1", t.body["token"]).status, 403);
}

TEST_F(ApiServerTest, WatchSendsBookmarksWhenAllowed) {
  std::atomic<int64_t> now{1'000'000};
  api_->set_clock([&now] { return now.load(); });
  api_->set_bookmark_interval_ms(60'000);
  Reply a = Post(kJobs, admin_, JobObj("team-a", "a"));
  ASSERT_EQ(a.status, 201);
  const std::string rv = a.body["metadata"]["resourceVersion"];
  const std::string from = "&resourceVersion=" + rv;
  WatchClient marked(http_->port(), kJobs + "?watch=1&allowWatchBookmarks=true" + from, admin_);
  WatchClient plain(http_->port(), kJobs + "?watch=1" + from, admin_);
  ASSERT_EQ(marked.Status(), 200);
  ASSERT_EQ(plain.Status(), 200);
  const std::string other = "/apis/tessera.io/v1/namespaces/team-b/jobs";
  // A change this watch does not show, before the interval has passed: nothing.
  ASSERT_EQ(Post(other, admin_, JobObj("team-b", "b1")).status, 201);
  EXPECT_TRUE(marked.Events(1, 300).empty());
  // After it: a bookmark at that change's revision, an object of the watched kind that
  // carries the revision only.
  now += 60'000;
  Reply b2 = Post(other, admin_, JobObj("team-b", "b2"));
  ASSERT_EQ(b2.status, 201);
  auto ev = marked.Events(1);
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0]["type"], "BOOKMARK");
  EXPECT_EQ(ev[0]["object"],
            json({{"apiVersion", "tessera.io/v1"},
                  {"kind", "Job"},
                  {"metadata", {{"resourceVersion", b2.body["metadata"]["resourceVersion"]}}}}));
  // Events of the watch itself come as before; a watch that did not allow bookmarks gets none.
  ASSERT_EQ(Post(kJobs, admin_, JobObj("team-a", "c")).status, 201);
  ev = marked.Events(2);
  ASSERT_EQ(ev.size(), 2u);
  EXPECT_EQ(ev[1]["type"], "ADDED");
  ev = plain.Events(1);
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0]["type"], "ADDED");
  EXPECT_EQ(ev[0]["object"]["metadata"]["name"], "c");
}

// The first events of a watch-list of one object: it ADDED, then the bookmark that ends the
// state.
void ExpectStateOfOneThenItsEnd(const std::vector<json>& ev, const std::string& name) {
  ASSERT_EQ(ev.size(), 2u);
  EXPECT_EQ(ev[0]["type"], "ADDED");
  EXPECT_EQ(ev[0]["object"]["metadata"]["name"], name);
  EXPECT_EQ(ev[1]["type"], "BOOKMARK");
  EXPECT_EQ(ev[1]["object"]["metadata"]["annotations"]["k8s.io/initial-events-end"], "true");
}

// An agent's watch of the Jobs bound to its node, as the agent opens it (watch-list).
const char kAgentWatch[] =
    "/apis/tessera.io/v1/jobs?watch=1&allowWatchBookmarks=true&sendInitialEvents=true"
    "&resourceVersionMatch=NotOlderThan";

// An agent follows the Jobs bound to its node by watch: it is shown those only, from the state
// on (the watch-list protocol), and a Job that stops being bound there, or is deleted, as
// DELETED, as Kubernetes shows an object leaving a watch's field selector.
TEST_F(ApiServerTest, AnAgentsWatchShowsTheJobsBoundToItsNodeOnly) {
  auto bind = [&](const std::string& name, const std::string& node, const std::string& phase = "") {
    const std::string path = kJobs + "/" + name;
    json job = Get(path, admin_).body;
    job["status"] = {{"phase", "Admitted"}, {"pods", {{{"name", "main-0"}, {"node", node}}}}};
    if (!phase.empty()) job["status"]["pods"][0]["state"] = {{"phase", phase}};
    return Call(http::verb::put, path, admin_, job.dump()).status;
  };
  for (const char* name : {"a", "b", "c"}) {
    ASSERT_EQ(Post(kJobs, admin_, JobObj("team-a", name)).status, 201);
  }
  ASSERT_EQ(bind("a", "n1"), 200);
  ASSERT_EQ(bind("b", "n2"), 200);
  const std::string n1 =
      Post("/apis/tessera.io/v1/tokens", admin_, {{"role", "agent"}, {"node", "n1"}}).body["token"];
  EXPECT_EQ(Call(http::verb::delete_, kJobs + "/a", n1, "").status, 403);
  WatchClient w(http_->port(), kAgentWatch, n1);
  ASSERT_EQ(w.Status(), 200);
  auto ev = w.Events(2);
  ExpectStateOfOneThenItsEnd(ev, "a");
  // Another node's Job changes unseen; one bound here later is ADDED, then MODIFIED.
  ASSERT_EQ(bind("b", "n3"), 200);
  ASSERT_EQ(bind("c", "n1"), 200);
  ASSERT_EQ(bind("c", "n1", "Running"), 200);
  ev = w.Events(4);
  ASSERT_EQ(ev.size(), 4u);
  EXPECT_EQ(ev[2]["type"], "ADDED");
  EXPECT_EQ(ev[2]["object"]["metadata"]["name"], "c");
  EXPECT_EQ(ev[3]["type"], "MODIFIED");
  EXPECT_EQ(ev[3]["object"]["metadata"]["name"], "c");
  // Bound elsewhere now, then deleted: DELETED each; a Job never shown is not.
  ASSERT_EQ(bind("a", "n2"), 200);
  ASSERT_EQ(Call(http::verb::delete_, kJobs + "/b", admin_, "").status, 200);
  ASSERT_EQ(Call(http::verb::delete_, kJobs + "/c", admin_, "").status, 200);
  ev = w.Events(7, 500);
  ASSERT_EQ(ev.size(), 6u);
  EXPECT_EQ(ev[4]["type"], "DELETED");
  EXPECT_EQ(ev[4]["object"]["metadata"]["name"], "a");
  EXPECT_EQ(ev[5]["type"], "DELETED");
  EXPECT_EQ(ev[5]["object"]["metadata"]["name"], "c");
}

// Jobs bound to the node, in one commit, and one of them moved off it in the next, before the
// node's watch reads: ADDED each, then DELETED the one moved. The watch reads the changes on its
// routes only (ChangeFeed::AfterRoutes); a Job's leaving comes on the Job's own route, which the
// watch asks for once it shows the Job, so it reads on from the revision that made it show it,
// that revision's other changes included (on etcd one commit's writes share a revision).
TEST_F(ApiServerTest, JobsBoundHereAndOneMovedAwayBeforeTheWatchReadsAreAddedThenDeleted) {
  ASSERT_EQ(Post(kJobs, admin_, JobObj("team-a", "d")).status, 201);
  ASSERT_EQ(Post(kJobs, admin_, JobObj("team-a", "e")).status, 201);
  const std::string n1 =
      Post("/apis/tessera.io/v1/tokens", admin_, {{"role", "agent"}, {"node", "n1"}}).body["token"];
  WatchClient w(http_->port(), kAgentWatch, n1);
  ASSERT_EQ(w.Status(), 200);
  auto ev = w.Events(1);
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0]["type"], "BOOKMARK");  // nothing bound here yet
  auto bound = [&](const std::string& name, const std::string& node) {
    json job = Get(kJobs + "/" + name, admin_).body;
    job["status"] = {{"phase", "Admitted"}, {"pods", {{{"name", "main-0"}, {"node", node}}}}};
    return store::Write{store::Write::Op::kPut, {"Job", "team-a", name}, job.dump(), {}};
  };
  // Two commits published together (one CatchUp of the feed), so that the watch reads them at
  // once where the store does not publish on its own (SQLite); on etcd its watch may deliver
  // them apart, and the watch must show the same.
  const std::vector<store::Write> both_here = {bound("d", "n1"), bound("e", "n1")};
  const std::vector<store::Write> d_away = {bound("d", "n2")};
  ASSERT_TRUE(api_->plane().store().Commit(both_here).ok());
  ASSERT_TRUE(api_->plane().store().Commit(d_away).ok());
  api_->plane().feed().CatchUp();
  ev = w.Events(4);
  ASSERT_EQ(ev.size(), 4u);
  EXPECT_EQ(ev[1]["type"], "ADDED");
  EXPECT_EQ(ev[1]["object"]["metadata"]["name"], "d");
  EXPECT_EQ(ev[2]["type"], "ADDED");
  EXPECT_EQ(ev[2]["object"]["metadata"]["name"], "e");
  EXPECT_EQ(ev[3]["type"], "DELETED");
  EXPECT_EQ(ev[3]["object"]["metadata"]["name"], "d");
  EXPECT_EQ(ev[3]["object"]["status"]["pods"][0]["node"], "n2");
}

// An agent follows a Job until it ends: its listing and watch leave out ended Jobs (a node
// turns over thousands), a watch shows a Job's end as DELETED, and the ended Job can still be
// read by name (a late report of another pod is checked against it).
TEST_F(ApiServerTest, AnAgentFollowsAJobBoundToItsNodeUntilItEnds) {
  auto bind = [&](const std::string& name, const std::string& phase) {
    const std::string path = kJobs + "/" + name;
    json job = Get(path, admin_).body;
    job["status"] = {{"phase", phase}, {"pods", {{{"name", "main-0"}, {"node", "n1"}}}}};
    return Call(http::verb::put, path, admin_, job.dump()).status;
  };
  for (const char* name : {"running", "done", "failed"}) {
    ASSERT_EQ(Post(kJobs, admin_, JobObj("team-a", name)).status, 201);
  }
  ASSERT_EQ(bind("running", "Admitted"), 200);
  ASSERT_EQ(bind("done", "Succeeded"), 200);
  ASSERT_EQ(bind("failed", "Failed"), 200);
  const std::string n1 =
      Post("/apis/tessera.io/v1/tokens", admin_, {{"role", "agent"}, {"node", "n1"}}).body["token"];
  const json list = Get("/apis/tessera.io/v1/jobs", n1).body;
  ASSERT_EQ(list["items"].size(), 1u) << list.dump();
  EXPECT_EQ(list["items"][0]["metadata"]["name"], "running");
  EXPECT_EQ(Get(kJobs + "/done", n1).status, 200);
  WatchClient w(http_->port(), kAgentWatch, n1);
  ASSERT_EQ(w.Status(), 200);
  auto ev = w.Events(2);
  ExpectStateOfOneThenItsEnd(ev, "running");
  ASSERT_EQ(bind("running", "Succeeded"), 200);
  ev = w.Events(3);
  ASSERT_EQ(ev.size(), 3u);
  EXPECT_EQ(ev[2]["type"], "DELETED");
  EXPECT_EQ(ev[2]["object"]["metadata"]["name"], "running");
  EXPECT_EQ(ev[2]["object"]["status"]["phase"], "Succeeded");
}

TEST_F(ApiServerTest, WatchListSendsTheStateThenABookmarkThatEndsIt) {
  ASSERT_EQ(Post(kJobs, admin_, JobObj("team-a", "a")).status, 201);
  // Kubernetes' watch-list: sendInitialEvents needs bookmarks and resourceVersionMatch.
  const std::string list = "?watch=1&sendInitialEvents=true&resourceVersionMatch=NotOlderThan";
  EXPECT_EQ(Get(kJobs + list, admin_).status, 400);
  EXPECT_EQ(Get(kJobs + "?watch=1&sendInitialEvents=true&allowWatchBookmarks=1", admin_).status,
            400);
  EXPECT_EQ(Get(kJobs + "?watch=1&resourceVersionMatch=NotOlderThan", admin_).status, 400);
  WatchClient w(http_->port(), kJobs + list + "&allowWatchBookmarks=true", admin_);
  auto ev = w.Events(2);
  ExpectStateOfOneThenItsEnd(ev, "a");
  // The same on a Kubernetes view, whose bookmarks are of its own kind.
  ASSERT_EQ(Post("/apis/kueue.x-k8s.io/v1beta1/clusterqueues", admin_,
                 json{{"apiVersion", "kueue.x-k8s.io/v1beta1"},
                      {"kind", "ClusterQueue"},
                      {"metadata", {{"name", "cq"}}},
                      {"spec", json::object()}})
                .status,
            201);
  WatchClient cq(http_->port(),
                 "/apis/kueue.x-k8s.io/v1beta1/clusterqueues" + list + "&allowWatchBookmarks=true",
                 admin_);
  ev = cq.Events(2);
  ASSERT_EQ(ev.size(), 2u);
  EXPECT_EQ(ev[0]["object"]["metadata"]["name"], "cq");
  EXPECT_EQ(ev[1]["type"], "BOOKMARK");
  EXPECT_EQ(ev[1]["object"]["apiVersion"], "kueue.x-k8s.io/v1beta1");
  EXPECT_EQ(ev[1]["object"]["kind"], "ClusterQueue");
  // sendInitialEvents=false: changes only, from now.
  WatchClient changes(http_->port(),
                      kJobs +
                          "?watch=1&sendInitialEvents=false&allowWatchBookmarks=true&"
                          "resourceVersionMatch=NotOlderThan",
                      admin_);
  ASSERT_EQ(changes.Status(), 200);  // the watch is in place: what follows is a change
  ASSERT_EQ(Post(kJobs, admin_, JobObj("team-a", "b")).status, 201);
  ev = changes.Events(1);
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0]["object"]["metadata"]["name"], "b");
}

// Server-side apply on the Kubernetes views; each step names the case of Kubernetes'
// test/integration/apiserver/apply/apply_test.go it mirrors.
TEST_F(ApiServerTest, ServerSideApplyAsKubernetesIntegrationTestsHaveIt) {
  const std::string apply = "application/apply-patch+yaml";
  const std::string pods = "/api/v1/namespaces/default/pods/";
  auto Apply = [&](const std::string& path, const std::string& body, const std::string& query) {
    return Call(http::verb::patch, path + query, admin_, body, apply);
  };
  const std::string pod = R"({"apiVersion": "v1", "kind": "Pod",
      "metadata": {"name": "test-pod"},
      "spec": {"containers": [{"name": "test-container", "command": ["true"],
                               "resources": {"limits": {"nvidia.com/gpu": 1}}}]}})";
  // TestApplyRequiresFieldManager.
  Reply r = Apply(pods + "test-pod", pod, "");
  EXPECT_EQ(r.status, 400);
  EXPECT_NE(r.raw.find("fieldManager"), std::string::npos);
  // TestApplyAlsoCreates: apply creates; another manager re-applying the same has no conflict.
  r = Apply(pods + "test-pod", pod, "?fieldManager=apply_test");
  ASSERT_EQ(r.status, 201) << r.raw;
  EXPECT_EQ(Get(pods + "test-pod", admin_).status, 200);
  r = Apply(pods + "test-pod", pod, "?fieldManager=apply_test_2");
  ASSERT_EQ(r.status, 200) << r.raw;
  ASSERT_EQ(r.body["metadata"]["managedFields"].size(), 2u);
  // TestCreateOnApplyFailsWithUID.
  r = Apply(pods + "test-pod-uid",
            R"({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "test-pod-uid",
                "uid": "88e00824-7f0e-11e8-94a1-c8d3ffb15800"},
                "spec": {"containers": [{"name": "c", "command": ["true"]}]}})",
            "?fieldManager=apply_test");
  EXPECT_EQ(r.status, 409) << r.raw;

  // TestApplyUpdateApplyConflictForced, on a batch/v1 Job.
  const std::string jobs = "/apis/batch/v1/namespaces/default/jobs/";
  const std::string job = R"(apiVersion: batch/v1
kind: Job
metadata:
  name: deployment
  labels: {app: nginx}
spec:
  parallelism: 3
  suspend: true
  template:
    spec:
      restartPolicy: Never
      containers:
      - name: nginx
        command: ["sleep", "1"]
)";
  r = Apply(jobs + "deployment", job, "?fieldManager=apply_test");
  ASSERT_EQ(r.status, 201) << r.raw;
  // TestNoOpUpdateSameResourceVersion: the same apply again writes nothing.
  const std::string rv = r.body["metadata"]["resourceVersion"];
  r = Apply(jobs + "deployment", job, "?fieldManager=apply_test");
  ASSERT_EQ(r.status, 200) << r.raw;
  EXPECT_EQ(r.body["metadata"]["resourceVersion"], rv);
  r = Call(http::verb::patch, jobs + "deployment", admin_, R"({"spec":{"parallelism":5}})",
           "application/merge-patch+json");
  ASSERT_EQ(r.status, 200) << r.raw;
  r = Apply(jobs + "deployment", job, "?fieldManager=apply_test");
  ASSERT_EQ(r.status, 409) << r.raw;
  EXPECT_EQ(r.body["reason"], "Conflict");
  ASSERT_GE(r.body["details"]["causes"].size(), 1u);
  EXPECT_EQ(r.body["details"]["causes"][0]["field"], ".spec.parallelism");
  EXPECT_EQ(r.body["details"]["causes"][0]["type"], "FieldManagerConflict");
  r = Apply(jobs + "deployment", job, "?fieldManager=apply_test&force=true");
  ASSERT_EQ(r.status, 200) << r.raw;
  EXPECT_EQ(r.body["spec"]["parallelism"], 3);
  // force belongs to apply.
  EXPECT_EQ(Call(http::verb::patch, jobs + "deployment?force=true", admin_, "{}",
                 "application/merge-patch+json")
                .status,
            400);
  // TestApplyRemoveContainerPort: a field left out of the next apply goes.
  std::string fewer = job;
  fewer.replace(fewer.find("  labels: {app: nginx}\n"), 23, "");
  r = Apply(jobs + "deployment", fewer, "?fieldManager=apply_test");
  ASSERT_EQ(r.status, 200) << r.raw;
  EXPECT_FALSE(r.body["metadata"].contains("labels")) << r.body["metadata"];
  // TestApplyFailsWithVersionMismatch.
  std::string other = job;
  other.replace(other.find("batch/v1"), 8, "batch/v2");
  EXPECT_EQ(Apply(jobs + "deployment", other, "?fieldManager=apply_test").status, 400);

  // TestApplyManagedFields: the updater owns what it changed, the applier the rest.
  const std::string cq = "/apis/kueue.x-k8s.io/v1beta1/clusterqueues/cq";
  const std::string queue = R"({"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "ClusterQueue",
      "metadata": {"name": "cq", "labels": {"test-label": "test"}},
      "spec": {"cohort": "a"}})";
  ASSERT_EQ(Apply(cq, queue, "?fieldManager=apply_test").status, 201);
  ASSERT_EQ(Call(http::verb::patch, cq + "?fieldManager=updater", admin_,
                 R"({"spec":{"cohort":"b"}})", "application/merge-patch+json")
                .status,
            200);
  r = Get(cq, admin_);
  const json& managed = r.body["metadata"]["managedFields"];
  ASSERT_EQ(managed.size(), 2u) << managed;
  EXPECT_EQ(managed[0]["manager"], "apply_test");
  EXPECT_EQ(managed[0]["operation"], "Apply");
  EXPECT_EQ(managed[0]["apiVersion"], "kueue.x-k8s.io/v1beta1");
  EXPECT_EQ(managed[0]["fieldsV1"],
            json({{"f:metadata", {{"f:labels", {{"f:test-label", json::object()}}}}}}));
  EXPECT_EQ(managed[1]["manager"], "updater");
  EXPECT_EQ(managed[1]["operation"], "Update");
  EXPECT_EQ(managed[1]["fieldsV1"], json({{"f:spec", {{"f:cohort", json::object()}}}}));

  // TestApplyRemovesEmptyManagedFields: an object applied with no fields has no managers.
  const std::string rf = "/apis/kueue.x-k8s.io/v1beta1/resourceflavors/empty";
  const std::string flavor =
      R"({"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "ResourceFlavor",
          "metadata": {"name": "empty"}})";
  ASSERT_EQ(Apply(rf, flavor, "?fieldManager=apply_test").status, 201);
  ASSERT_EQ(Apply(rf, flavor, "?fieldManager=apply_test").status, 200);
  EXPECT_FALSE(Get(rf, admin_).body["metadata"].contains("managedFields"));
}

TEST_F(ApiServerTest, WatchEndsAfterItsTimeout) {
  WatchClient w(http_->port(), kJobs + "?watch=1&timeoutSeconds=1", admin_);
  ASSERT_EQ(w.Status(), 200);
  w.Events(1, 3000);
  EXPECT_TRUE(w.ended());
}

TEST_F(ApiServerTest, StateAndTokensSurviveARestart) {
  ASSERT_EQ(Post(kJobs, admin_, JobObj("team-a", "keep")).status, 201);
  Reply t = Post("/apis/tessera.io/v1/tokens", admin_, {{"namespace", "team-a"}});
  const std::string team_a = t.body["token"];
  StopServer();
  StartServer();
  // The admin token file was not rewritten: the old token still works.
  EXPECT_EQ(Get(kJobs + "/keep", admin_).status, 200);
  EXPECT_EQ(Get(kJobs + "/keep", team_a).status, 200);
}

// Kubernetes clients find the API through discovery and read Nodes in core/v1 shape at
// /api/v1/nodes; Tessera's own kinds are served under /apis/tessera.io/v1.
TEST_F(ApiServerTest, DiscoveryAndTheCoreNodeView) {
  Reply version = Get("/version", "");
  EXPECT_EQ(version.status, 200);
  EXPECT_EQ(version.body["major"], "1");
  EXPECT_EQ(Get("/api", "").status, 401);
  EXPECT_EQ(Get("/api", admin_).body["versions"][0], "v1");
  // Kubernetes' groups first, as kube-apiserver lists its own before the others.
  const json groups = Get("/apis", admin_).body["groups"];
  EXPECT_EQ(groups[0]["name"], "batch");
  EXPECT_EQ(groups[groups.size() - 2]["name"], "tessera.io");
  // The resource metrics API, as metrics-server registers it, last.
  EXPECT_EQ(groups.back()["name"], "metrics.k8s.io");
  EXPECT_EQ(Get("/apis/metrics.k8s.io/v1beta1", admin_).body["resources"][0]["kind"],
            "NodeMetrics");
  EXPECT_EQ(Get("/apis/tessera.io/v1", admin_).body["groupVersion"], "tessera.io/v1");
  EXPECT_EQ(Get("/api/v1", admin_).body["resources"][5]["name"], "nodes");

  const json node = {
      {"apiVersion", "tessera.io/v1"},
      {"kind", "Node"},
      {"metadata", {{"name", "gpu-a"}}},
      {"spec", json::object()},
      {"status",
       {{"allocatable", {{"cpu", "8"}, {"memory", "64Gi"}}},
        {"gpus", {{{"index", 0}, {"uuid", "GPU-0"}, {"model", "H100-80GB"}, {"memoryMiB", 81559}}}},
        {"heartbeat", FormatTime(std::chrono::duration_cast<std::chrono::milliseconds>(
                                     std::chrono::system_clock::now().time_since_epoch())
                                     .count())}}}};
  ASSERT_EQ(Post("/apis/tessera.io/v1/nodes", admin_, node).status, 201);
  Reply list = Get("/api/v1/nodes", admin_);
  ASSERT_EQ(list.status, 200) << list.raw;
  EXPECT_EQ(list.body["kind"], "NodeList");
  EXPECT_EQ(list.body["apiVersion"], "v1");
  ASSERT_EQ(list.body["items"].size(), 1u);
  EXPECT_EQ(list.body["items"][0]["status"]["capacity"]["nvidia.com/gpu"], "1");
  EXPECT_EQ(list.body["items"][0]["status"]["conditions"][0]["status"], "True");
  Reply one = Get("/api/v1/nodes/gpu-a", admin_);
  EXPECT_EQ(one.body["kind"], "Node");
  EXPECT_EQ(Get("/api/v1/nodes/nope", admin_).status, 404);
  EXPECT_EQ(Get("/api/v1/nodes?labelSelector=kubernetes.io/hostname%3Dother", admin_)
                .body["items"]
                .size(),
            0u);
  // A table when kubectl asks for one.
  const json t = Table("/api/v1/nodes");
  EXPECT_EQ(t["kind"], "Table");
  EXPECT_EQ(t["rows"][0]["cells"][0], "gpu-a");
  // kubectl cordon, label and taint: strategic merge patches of the view reach the Node.
  const std::string smp = "application/strategic-merge-patch+json";
  Reply cordoned = Call(http::verb::patch, "/api/v1/nodes/gpu-a", admin_,
                        R"({"spec":{"unschedulable":true}})", smp);
  ASSERT_EQ(cordoned.status, 200) << cordoned.raw;
  EXPECT_EQ(cordoned.body["spec"]["unschedulable"], true);
  ASSERT_EQ(Call(http::verb::patch, "/api/v1/nodes/gpu-a", admin_,
                 R"({"metadata":{"labels":{"team":"vision"}}})", smp)
                .status,
            200);
  ASSERT_EQ(Call(http::verb::patch, "/api/v1/nodes/gpu-a", admin_,
                 R"({"spec":{"taints":[{"key":"a","effect":"NoSchedule"}]}})", smp)
                .status,
            200);
  ASSERT_EQ(Call(http::verb::patch, "/api/v1/nodes/gpu-a", admin_,
                 R"({"spec":{"$setElementOrder/taints":[{"key":"a"},{"key":"b"}],
                     "taints":[{"key":"b","effect":"NoExecute"}]}})",
                 smp)
                .status,
            200);
  const json tnode = Get("/apis/tessera.io/v1/nodes/gpu-a", admin_).body;
  EXPECT_EQ(tnode["spec"]["unschedulable"], true);
  EXPECT_EQ(tnode["metadata"]["labels"], json({{"team", "vision"}})) << tnode.dump();
  ASSERT_EQ(tnode["spec"]["taints"].size(), 2u);
  EXPECT_EQ(tnode["spec"]["taints"][1]["key"], "b");
  EXPECT_EQ(tnode["status"]["gpus"][0]["uuid"], "GPU-0");  // the agent's report stays
  Reply status = Call(http::verb::patch, "/api/v1/nodes/gpu-a", admin_,
                      R"({"status":{"capacity":{"nvidia.com/gpu":"9"}}})", smp);
  EXPECT_EQ(status.status, 200);  // status is the agent's: not a change of the view's spec
  EXPECT_EQ(Get("/api/v1/nodes/gpu-a", admin_).body["status"]["capacity"]["nvidia.com/gpu"], "1");
  Reply other = Call(http::verb::patch, "/api/v1/nodes/gpu-a", admin_,
                     R"({"spec":{"podCIDR":"10.0.0.0/24"}})", smp);
  EXPECT_EQ(other.status, 400);
  EXPECT_NE(other.raw.find("spec.podCIDR: a node's labels"), std::string::npos) << other.raw;
  const std::string team =
      Post("/apis/tessera.io/v1/tokens", admin_, {{"namespace", "team-a"}}).body["token"];
  EXPECT_EQ(Call(http::verb::patch, "/api/v1/nodes/gpu-a", team, "{}", smp).status, 403);
  ASSERT_EQ(Call(http::verb::patch, "/api/v1/nodes/gpu-a", admin_,
                 R"({"spec":{"unschedulable":null}})", smp)
                .status,
            200);
  EXPECT_FALSE(
      Get("/apis/tessera.io/v1/nodes/gpu-a", admin_).body["spec"].contains("unschedulable"));
  // A node watch, as kubectl get nodes -w.
  WatchClient watch(http_->port(), "/api/v1/nodes?watch=true", admin_);
  ASSERT_EQ(watch.Status(), 200);
  auto ev = watch.Events(1);
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0]["object"]["kind"], "Node");

  // Nodes are not made or deleted through the view, and the core group has no Tessera kinds.
  EXPECT_EQ(Call(http::verb::delete_, "/api/v1/nodes/gpu-a", admin_).status, 405);
  EXPECT_EQ(Get("/api/v1/namespaces/team-a/jobs", admin_).status, 404);
  EXPECT_EQ(Get("/apis/tessera.io/v1/nodes/gpu-a", admin_).body["apiVersion"], "tessera.io/v1");
}

json KubePod(const std::string& name, int gpus) {
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata", {{"name", name}}},
          {"spec",
           {{"containers",
             {{{"name", "trainer"},
               {"image", "pytorch:24"},
               {"resources", {{"limits", {{"nvidia.com/gpu", gpus}}}}}}}}}}};
}

TEST_F(ApiServerTest, KubernetesKindsAtTheirOwnGroups) {
  // Create: the Pod becomes a Tessera Job that remembers it; the reply is the Pod.
  Reply created = Post("/api/v1/namespaces/default/pods", admin_, KubePod("train", 2));
  ASSERT_EQ(created.status, 201) << created.raw;
  EXPECT_EQ(created.body["kind"], "Pod");
  EXPECT_EQ(created.body["apiVersion"], "v1");
  EXPECT_EQ(created.body["metadata"]["namespace"], "default");
  EXPECT_EQ(created.body["metadata"]["uid"].get<std::string>().size(), 36u);
  EXPECT_EQ(created.body["status"]["phase"], "Pending");
  const json job = Get("/apis/tessera.io/v1/namespaces/default/jobs/train", admin_).body;
  EXPECT_EQ(job["spec"]["tasks"][0]["resources"]["limits"]["nvidia.com/gpu"], 2);
  EXPECT_TRUE(job["metadata"]["annotations"].contains("tessera.io/source"));
  EXPECT_EQ(job["metadata"]["uid"], created.body["metadata"]["uid"]);
  EXPECT_EQ(Post("/api/v1/namespaces/default/pods", admin_, KubePod("train", 2)).status, 409);
  Reply got = Get("/api/v1/namespaces/default/pods/train", admin_);
  ASSERT_EQ(got.status, 200);
  EXPECT_EQ(got.body["spec"]["containers"][0]["image"], "pytorch:24");
  EXPECT_EQ(Get("/api/v1/pods", admin_).body["items"].size(), 1u);
  EXPECT_EQ(Get("/api/v1/namespaces/other/pods", admin_).body["items"].size(), 0u);
  EXPECT_EQ(Get("/api/v1/namespaces/default/pods/nope", admin_).status, 404);
  // Field selectors (kubectl delete waits with metadata.name); unknown fields are refused.
  EXPECT_EQ(Get("/api/v1/pods?fieldSelector=metadata.name%3Dtrain", admin_).body["items"].size(),
            1u);
  EXPECT_EQ(Get("/api/v1/pods?fieldSelector=metadata.name%3Dother", admin_).body["items"].size(),
            0u);
  EXPECT_EQ(
      Get("/api/v1/pods?fieldSelector=status.phase%21%3DRunning", admin_).body["items"].size(), 1u);
  EXPECT_EQ(Get("/api/v1/pods?fieldSelector=spec.foo%3Dx", admin_).status, 400);
  EXPECT_EQ(Get("/apis/tessera.io/v1/jobs?fieldSelector=metadata.name%3Dtrain", admin_)
                .body["items"]
                .size(),
            1u);

  // Strategic merge (kubectl's patch of built-in kinds): containers merge on their names.
  const char* smp = R"({"metadata":{"labels":{"team":"a"}},
      "spec":{"containers":[{"name":"trainer","env":[{"name":"X","value":"1"}]}]}})";
  Reply patched = Call(http::verb::patch, "/api/v1/namespaces/default/pods/train", admin_, smp,
                       "application/strategic-merge-patch+json");
  ASSERT_EQ(patched.status, 200) << patched.raw;
  EXPECT_EQ(patched.body["spec"]["containers"].size(), 1u);
  EXPECT_EQ(patched.body["spec"]["containers"][0]["image"], "pytorch:24");
  EXPECT_EQ(patched.body["metadata"]["labels"]["team"], "a");
  const json job2 = Get("/apis/tessera.io/v1/namespaces/default/jobs/train", admin_).body;
  EXPECT_EQ(job2["spec"]["tasks"][0]["env"]["X"], "1");
  EXPECT_EQ(job2["metadata"]["uid"], job["metadata"]["uid"]);
  // Server-side apply needs a field manager here, and is not served on Tessera's kinds.
  EXPECT_EQ(Call(http::verb::patch, "/api/v1/namespaces/default/pods/train", admin_, "{}",
                 "application/apply-patch+yaml")
                .status,
            400);
  EXPECT_EQ(Call(http::verb::patch, "/apis/tessera.io/v1/namespaces/default/jobs/train", admin_,
                 "{}", "application/apply-patch+yaml")
                .status,
            415);
  // A stale resourceVersion on replace is a conflict.
  json stale = got.body;
  stale["metadata"]["resourceVersion"] = "1";
  EXPECT_EQ(
      Call(http::verb::put, "/api/v1/namespaces/default/pods/train", admin_, stale.dump()).status,
      409);

  // Unknown fields are refused naming them, and nothing is written.
  json bad = KubePod("typo", 1);
  bad["spec"]["containers"][0]["imagee"] = "x";
  Reply refused = Post("/api/v1/namespaces/default/pods", admin_, bad);
  EXPECT_EQ(refused.status, 400);
  EXPECT_NE(refused.raw.find("spec.containers[0].imagee"), std::string::npos) << refused.raw;
  EXPECT_EQ(Get("/apis/tessera.io/v1/namespaces/default/jobs/typo", admin_).status, 404);
  EXPECT_EQ(Post("/apis/batch/v1/namespaces/default/jobs", admin_, KubePod("p", 1)).status, 400);

  // A Kueue ClusterQueue, merge-patched as kubectl patches custom kinds.
  const json cq = {
      {"apiVersion", "kueue.x-k8s.io/v1beta1"},
      {"kind", "ClusterQueue"},
      {"metadata", {{"name", "gpus"}}},
      {"spec",
       {{"resourceGroups",
         {{{"coveredResources", {"nvidia.com/gpu"}},
           {"flavors",
            {{{"name", "h100"},
              {"resources", {{{"name", "nvidia.com/gpu"}, {"nominalQuota", 64}}}}}}}}}}}}};
  ASSERT_EQ(Post("/apis/kueue.x-k8s.io/v1beta1/clusterqueues", admin_, cq).status, 201);
  json cq2 = cq;
  cq2["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"] = 32;
  Reply merged = Call(http::verb::patch, "/apis/kueue.x-k8s.io/v1beta1/clusterqueues/gpus", admin_,
                      json{{"spec", cq2["spec"]}}.dump(), "application/merge-patch+json");
  ASSERT_EQ(merged.status, 200) << merged.raw;
  EXPECT_EQ(Get("/apis/tessera.io/v1/queues/gpus", admin_)
                .body["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"],
            32);

  // A device-plugin ConfigMap makes one GpuSharingConfig per key; a key removed removes its.
  json cm = {{"apiVersion", "v1"},
             {"kind", "ConfigMap"},
             {"metadata", {{"name", "plugin"}, {"namespace", "kube-system"}}},
             {"data",
              {{"any", "version: v1\n"},
               {"a100",
                "version: v1\nsharing:\n  timeSlicing:\n    resources:\n    - name: "
                "nvidia.com/gpu\n      replicas: 4\n"}}}};
  ASSERT_EQ(Post("/api/v1/namespaces/kube-system/configmaps", admin_, cm).status, 201);
  EXPECT_EQ(Get("/apis/tessera.io/v1/gpusharingconfigs", admin_).body["items"].size(), 2u);
  EXPECT_EQ(Get("/api/v1/namespaces/kube-system/configmaps", admin_).body["items"].size(), 1u);
  cm["data"].erase("a100");
  ASSERT_EQ(
      Call(http::verb::put, "/api/v1/namespaces/kube-system/configmaps/plugin", admin_, cm.dump())
          .status,
      200);
  EXPECT_EQ(Get("/apis/tessera.io/v1/gpusharingconfigs", admin_).body["items"].size(), 1u);

  // A namespace token works in its namespace only.
  const json tok = Post("/apis/tessera.io/v1/tokens", admin_, {{"namespace", "team-a"}}).body;
  const std::string team = tok["token"];
  EXPECT_EQ(Post("/api/v1/namespaces/team-a/pods", team, KubePod("mine", 1)).status, 201);
  EXPECT_EQ(Post("/api/v1/namespaces/default/pods", team, KubePod("theirs", 1)).status, 403);
  EXPECT_EQ(Get("/api/v1/pods", team).status, 403);
  EXPECT_EQ(Get("/api/v1/namespaces/kube-system/configmaps", team).status, 403);
  // Agents see only the Jobs bound to their node, through Tessera's paths: none here.
  const std::string agent =
      Post("/apis/tessera.io/v1/tokens", admin_, {{"role", "agent"}, {"node", "n1"}}).body["token"];
  EXPECT_EQ(Get("/api/v1/pods", agent).status, 403);
  EXPECT_EQ(Post("/api/v1/namespaces/team-a/pods", agent, KubePod("a", 1)).status, 403);

  // Tables, delete, dry runs.
  const json t = Table("/api/v1/namespaces/default/pods");
  EXPECT_EQ(t["kind"], "Table");
  EXPECT_EQ(t["rows"][0]["cells"][0], "train");
  EXPECT_EQ(t["rows"][0]["cells"][2], "Pending");
  EXPECT_EQ(Post("/api/v1/namespaces/default/pods?dryRun=All", admin_, KubePod("dry", 1)).status,
            201);
  EXPECT_EQ(Get("/api/v1/namespaces/default/pods/dry", admin_).status, 404);
  EXPECT_EQ(Call(http::verb::delete_, "/api/v1/namespaces/default/pods/train", admin_).status, 200);
  EXPECT_EQ(Get("/apis/tessera.io/v1/namespaces/default/jobs/train", admin_).status, 404);
  EXPECT_EQ(Call(http::verb::delete_, "/api/v1/namespaces/default/pods/train", admin_).status, 404);

  // deletecollection (the client libraries' delete_collection_*): what the selectors match, in
  // one write; a namespace token only in its namespace.
  for (const char* n : {"c1", "c2", "c3"}) {
    json pod = KubePod(n, 1);
    pod["metadata"]["labels"] = {{"batch", std::string(n) == "c3" ? "b" : "a"}};
    ASSERT_EQ(Post("/api/v1/namespaces/default/pods", admin_, pod).status, 201);
  }
  EXPECT_EQ(
      Call(http::verb::delete_, "/api/v1/namespaces/default/pods?labelSelector=batch%3Da", team)
          .status,
      403);
  Reply dry = Call(http::verb::delete_,
                   "/api/v1/namespaces/default/pods?labelSelector=batch%3Da&dryRun=All", admin_);
  EXPECT_EQ(dry.body["items"].size(), 2u) << dry.raw;
  EXPECT_EQ(Get("/api/v1/namespaces/default/pods/c1", admin_).status, 200);
  Reply gone =
      Call(http::verb::delete_, "/api/v1/namespaces/default/pods?labelSelector=batch%3Da", admin_);
  ASSERT_EQ(gone.status, 200) << gone.raw;
  EXPECT_EQ(gone.body["kind"], "PodList");
  ASSERT_EQ(gone.body["items"].size(), 2u);
  EXPECT_EQ(gone.body["items"][0]["metadata"]["name"], "c1");
  EXPECT_EQ(Get("/apis/tessera.io/v1/namespaces/default/jobs/c2", admin_).status, 404);
  EXPECT_EQ(Get("/api/v1/namespaces/default/pods/c3", admin_).status, 200);
  EXPECT_EQ(Call(http::verb::delete_, "/api/v1/namespaces/team-a/pods", team).body["items"].size(),
            1u);
  EXPECT_EQ(Get("/api/v1/namespaces/team-a/pods/mine", admin_).status, 404);
}

TEST_F(ApiServerTest, DiscoveryAndOpenApiOfEveryServedGroup) {
  EXPECT_EQ(Get("/apis/batch", admin_).body["preferredVersion"]["groupVersion"], "batch/v1");
  const json batch = Get("/apis/batch/v1", admin_).body;
  EXPECT_EQ(batch["resources"][0]["name"], "jobs");
  EXPECT_EQ(Get("/apis/kueue.x-k8s.io/v1alpha1", admin_).body["resources"][0]["kind"], "Cohort");
  EXPECT_EQ(Get("/apis/nope.io/v1", admin_).status, 404);
  // OpenAPI v3: every group version, and PATCH declares fieldValidation so kubectl leaves
  // validation to the server.
  const json index = Get("/openapi/v3", admin_).body;
  ASSERT_TRUE(index["paths"].contains("apis/batch/v1"));
  ASSERT_TRUE(index["paths"].contains("apis/tessera.io/v1"));
  const std::string url = index["paths"]["apis/batch/v1"]["serverRelativeURL"];
  const json doc = Get(url, admin_).body;
  const json& patch = doc["paths"]["/apis/batch/v1/namespaces/{namespace}/jobs/{name}"]["patch"];
  EXPECT_EQ(patch["x-kubernetes-group-version-kind"]["kind"], "Job");
  EXPECT_EQ(patch["parameters"][0]["name"], "fieldValidation");
  EXPECT_FALSE(patch["requestBody"]["content"].contains("application/strategic-merge-patch+json"));
  // Aggregated discovery, which kubectl 1.30+ asks for first.
  HttpRequest agg;
  agg.method = "GET";
  agg.path = "/apis";
  agg.authorization = "Bearer " + admin_;
  agg.accept =
      "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json";
  HttpResponse ad = api_->Handle(agg);
  EXPECT_EQ(ad.content_type,
            "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList");
  const json groups = json::parse(ad.body);
  EXPECT_EQ(groups["kind"], "APIGroupDiscoveryList");
  EXPECT_EQ(groups["items"][0]["metadata"]["name"], "batch");
  const json& jobs = groups["items"][0]["versions"][0]["resources"][0];
  EXPECT_EQ(jobs["resource"], "jobs");
  EXPECT_EQ(jobs["scope"], "Namespaced");
  EXPECT_EQ(jobs["responseKind"]["group"], "batch");
  EXPECT_EQ(groups["items"][groups["items"].size() - 2]["metadata"]["name"], "tessera.io");
  EXPECT_EQ(groups["items"].back()["metadata"]["name"], "metrics.k8s.io");
  EXPECT_EQ(groups["items"].back()["versions"][0]["resources"][1]["resource"], "pods");
  agg.path = "/api";
  const json core = json::parse(api_->Handle(agg).body);
  EXPECT_EQ(core["items"][0]["metadata"]["name"], "");
  EXPECT_EQ(core["items"][0]["versions"][0]["resources"][0]["resource"], "pods");
  // OpenAPI v2 as JSON, and as the protocol buffer kubectl asks for.
  EXPECT_EQ(Get("/openapi/v2", admin_).body["swagger"], "2.0");
  HttpRequest pb;
  pb.method = "GET";
  pb.path = "/openapi/v2";
  pb.authorization = "Bearer " + admin_;
  pb.accept = "application/com.github.proto-openapi.spec.v2@v1.0+protobuf";
  const HttpResponse r = api_->Handle(pb);
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.body.substr(0, 5), std::string("\x0a\x03"
                                             "2.0",
                                             5));
  // Tessera's kinds take PATCH too (kubectl apply re-applies with a merge patch).
  ASSERT_EQ(
      Post("/apis/tessera.io/v1/namespaces/team-a/jobs", admin_, JobObj("team-a", "j")).status,
      201);
  Reply p = Call(http::verb::patch, "/apis/tessera.io/v1/namespaces/team-a/jobs/j", admin_,
                 R"({"metadata":{"labels":{"x":"y"}}})", "application/merge-patch+json");
  ASSERT_EQ(p.status, 200) << p.raw;
  EXPECT_EQ(p.body["metadata"]["labels"]["x"], "y");
}

TEST_F(ApiServerTest, PodsOfEveryJobTheirLogsAndEventsAsKubernetesServesThem) {
  // A Tessera Job of two replicas shows as two Pods, owned by the Job.
  json job = JobObj("team-a", "j");
  job["spec"]["tasks"][0]["replicas"] = 2;
  ASSERT_EQ(Post(kJobs, admin_, job).status, 201);
  Reply pods = Get("/api/v1/namespaces/team-a/pods", admin_);
  ASSERT_EQ(pods.status, 200) << pods.raw;
  ASSERT_EQ(pods.body["items"].size(), 2u);
  const json& pod = pods.body["items"][1];
  EXPECT_EQ(pod["metadata"]["name"], "j-main-1");
  EXPECT_EQ(pod["metadata"]["ownerReferences"][0]["kind"], "Job");
  EXPECT_EQ(pod["metadata"]["ownerReferences"][0]["apiVersion"], "tessera.io/v1");
  EXPECT_EQ(pod["metadata"]["labels"]["job-name"], "j");
  EXPECT_EQ(pod["status"]["phase"], "Pending");
  EXPECT_EQ(pod["metadata"]["uid"].get<std::string>().size(), 36u);
  EXPECT_EQ(Get("/api/v1/namespaces/team-a/pods/j-main-1", admin_).body["metadata"]["uid"],
            pod["metadata"]["uid"]);
  // Pages, as kubectl and the client libraries ask for them.
  Reply page = Get("/api/v1/namespaces/team-a/pods?limit=1", admin_);
  ASSERT_EQ(page.body["items"].size(), 1u);
  EXPECT_EQ(page.body["items"][0]["metadata"]["name"], "j-main-0");
  EXPECT_EQ(page.body["metadata"]["remainingItemCount"], 1);
  const std::string token = page.body["metadata"]["continue"];
  page = Get("/api/v1/namespaces/team-a/pods?limit=1&continue=" + token, admin_);
  ASSERT_EQ(page.body["items"].size(), 1u);
  EXPECT_EQ(page.body["items"][0]["metadata"]["name"], "j-main-1");
  EXPECT_FALSE(page.body["metadata"].contains("continue"));
  EXPECT_EQ(Get("/api/v1/namespaces/team-a/pods?limit=1&continue=zz", admin_).status, 400);
  ASSERT_EQ(Post(kJobs, admin_, JobObj("team-a", "k")).status, 201);
  page = Get(kJobs + "?limit=1", admin_);
  ASSERT_EQ(page.body["items"].size(), 1u);
  page = Get(kJobs + "?limit=5&continue=" + page.body["metadata"]["continue"].get<std::string>(),
             admin_);
  ASSERT_EQ(page.body["items"].size(), 1u);
  EXPECT_EQ(page.body["items"][0]["metadata"]["name"], "k");

  // Tessera's Jobs as kubectl get jobs.tessera.io shows them.
  const json jobs_table = Table(kJobs);
  EXPECT_EQ(jobs_table["columnDefinitions"][1]["name"], "Phase");
  EXPECT_EQ(jobs_table["rows"][0]["cells"][1], "Pending");
  EXPECT_EQ(jobs_table["rows"][0]["cells"][3], 2);  // 2 replicas x 1 GPU
  EXPECT_EQ(Table(kJobs + "/j")["rows"].size(), 1u);

  // A Volcano PodGroup's status counts the Jobs that join it.
  const json pg = json::parse(R"({"apiVersion": "scheduling.volcano.sh/v1beta1",
      "kind": "PodGroup", "metadata": {"name": "gang"}, "spec": {"minMember": 2}})");
  ASSERT_EQ(
      Post("/apis/scheduling.volcano.sh/v1beta1/namespaces/team-a/podgroups", admin_, pg).status,
      201);
  json member = JobObj("team-a", "member");
  member["spec"]["podGroup"] = "gang";
  ASSERT_EQ(Post(kJobs, admin_, member).status, 201);
  const json group =
      Get("/apis/scheduling.volcano.sh/v1beta1/namespaces/team-a/podgroups/gang", admin_).body;
  EXPECT_EQ(group["status"]["phase"], "Pending") << group.dump();
  EXPECT_EQ(group["status"]["running"], 0);
  EXPECT_EQ(Call(http::verb::delete_,
                 "/apis/scheduling.volcano.sh/v1beta1/namespaces/team-a/podgroups/"
                 "gang?propagationPolicy=Orphan",
                 admin_)
                .status,
            400);
  ASSERT_EQ(Call(http::verb::delete_, kJobs + "/member", admin_).status, 200);

  // Such a pod is changed through its Job.
  Reply refused = Call(http::verb::delete_, "/api/v1/namespaces/team-a/pods/j-main-0", admin_);
  EXPECT_EQ(refused.status, 405);
  EXPECT_NE(refused.raw.find("change or delete that instead"), std::string::npos) << refused.raw;

  // Its output, as kubectl logs reads it.
  ASSERT_EQ(
      Call(http::verb::post, kJobs + "/j/logs?pod=main-1", admin_, "epoch 1\nepoch 2\n").status,
      200);
  Reply log = Get("/api/v1/namespaces/team-a/pods/j-main-1/log?tailLines=1", admin_);
  ASSERT_EQ(log.status, 200) << log.raw;
  EXPECT_EQ(log.raw, "epoch 2\n");
  EXPECT_EQ(Get("/api/v1/namespaces/team-a/pods/j-main-1/log?container=main", admin_).raw,
            "epoch 1\nepoch 2\n");
  EXPECT_EQ(Get("/api/v1/namespaces/team-a/pods/j-main-1/log?container=other", admin_).status, 400);
  EXPECT_EQ(Get("/api/v1/namespaces/team-a/pods/nope/log", admin_).status, 404);
  // A pod with no node and no output: refused as kube-apiserver refuses it, not waited on.
  Reply unplaced = Get("/api/v1/namespaces/team-a/pods/j-main-0/log?follow=true", admin_);
  EXPECT_EQ(unplaced.status, 400);
  EXPECT_NE(unplaced.raw.find("pod j-main-0 does not have a host assigned"), std::string::npos)
      << unplaced.raw;

  // Events name the object as the Kubernetes API serves it, so kubectl describe finds them.
  json batch = {
      {"apiVersion", "batch/v1"},
      {"kind", "Job"},
      {"metadata", {{"name", "b"}}},
      {"spec",
       {{"podReplacementPolicy", "Failed"},
        {"template", {{"spec", {{"containers", {{{"name", "c"}, {"image", "busybox"}}}}}}}}}}};
  Reply made = Post("/apis/batch/v1/namespaces/default/jobs", admin_, batch);
  ASSERT_EQ(made.status, 201) << made.raw;
  const std::string uid = made.body["metadata"]["uid"];
  Reply events =
      Get("/api/v1/namespaces/default/events?fieldSelector=involvedObject.name%3Db,"
          "involvedObject.namespace%3Ddefault,involvedObject.kind%3DJob,involvedObject.uid%3D" +
              uid,
          admin_);
  ASSERT_EQ(events.status, 200) << events.raw;
  ASSERT_EQ(events.body["items"].size(), 1u) << events.raw;
  const json& e = events.body["items"][0];
  EXPECT_EQ(e["reason"], "NotActedOn");
  EXPECT_EQ(e["type"], "Warning");
  EXPECT_EQ(e["involvedObject"]["apiVersion"], "batch/v1");
  EXPECT_NE(e["message"].get<std::string>().find("podReplacementPolicy"), std::string::npos);
  EXPECT_EQ(
      Get("/api/v1/events?fieldSelector=involvedObject.kind%3DPod", admin_).body["items"].size(),
      0u);
  EXPECT_EQ(Table("/api/v1/events")["columnDefinitions"][3]["name"], "Object");
  // The same events as events.k8s.io/v1 serves them.
  const json v1 = Get("/apis/events.k8s.io/v1/namespaces/default/events?fieldSelector="
                      "regarding.name%3Db",
                      admin_)
                      .body;
  ASSERT_EQ(v1["items"].size(), 1u) << v1.dump();
  EXPECT_EQ(v1["items"][0]["apiVersion"], "events.k8s.io/v1");
  EXPECT_EQ(v1["items"][0]["regarding"]["uid"], uid);
  EXPECT_EQ(v1["items"][0]["note"], e["message"]);
  EXPECT_EQ(v1["items"][0]["eventTime"].get<std::string>().size(), 27u);  // microseconds
  EXPECT_EQ(Post("/api/v1/namespaces/default/events", admin_, e).status, 405);
}

TEST_F(ApiServerTest, WatchesOfTheKubernetesViews) {
  ASSERT_EQ(Post(kJobs, admin_, JobObj("team-a", "first")).status, 201);
  // Go's boolean spellings (the Python client sends "True").
  WatchClient pods(http_->port(), "/api/v1/namespaces/team-a/pods?watch=True", admin_);
  ASSERT_EQ(pods.Status(), 200);
  auto ev = pods.Events(1);
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0]["type"], "ADDED");
  EXPECT_EQ(ev[0]["object"]["kind"], "Pod");
  EXPECT_EQ(ev[0]["object"]["metadata"]["name"], "first-main-0");
  ASSERT_EQ(Post("/api/v1/namespaces/team-a/pods", admin_, KubePod("second", 1)).status, 201);
  ev = pods.Events(2);
  ASSERT_EQ(ev.size(), 2u);
  EXPECT_EQ(ev[1]["type"], "ADDED");
  EXPECT_EQ(ev[1]["object"]["metadata"]["name"], "second");
  ASSERT_EQ(Call(http::verb::delete_, "/api/v1/namespaces/team-a/pods/second", admin_).status, 200);
  ev = pods.Events(3);
  ASSERT_EQ(ev.size(), 3u);
  EXPECT_EQ(ev[2]["type"], "DELETED");

  // A Kueue kind's watch sees its own objects only, from a resourceVersion on.
  const std::string rv = std::to_string(api_->plane().store().Revision());
  WatchClient cqs(http_->port(),
                  "/apis/kueue.x-k8s.io/v1beta1/clusterqueues?watch=true&resourceVersion=" + rv,
                  admin_);
  ASSERT_EQ(cqs.Status(), 200);
  const json queue = {{"apiVersion", "tessera.io/v1"},
                      {"kind", "Queue"},
                      {"metadata", {{"name", "native"}}},
                      {"spec", json::object()}};
  ASSERT_EQ(Post("/apis/tessera.io/v1/queues", admin_, queue).status, 201);
  const json cq = {{"apiVersion", "kueue.x-k8s.io/v1beta1"},
                   {"kind", "ClusterQueue"},
                   {"metadata", {{"name", "viewed"}}},
                   {"spec", json::object()}};
  ASSERT_EQ(Post("/apis/kueue.x-k8s.io/v1beta1/clusterqueues", admin_, cq).status, 201);
  ev = cqs.Events(1);
  ASSERT_EQ(ev.size(), 1u);
  EXPECT_EQ(ev[0]["object"]["metadata"]["name"], "viewed");
  EXPECT_EQ(ev[0]["object"]["apiVersion"], "kueue.x-k8s.io/v1beta1");
}

TEST_F(ApiServerTest, NamespacesAreImplicitWrittenAndDeletedWithWhatIsInThem) {
  ASSERT_EQ(Post(kJobs, admin_, JobObj("team-a", "j")).status, 201);
  json list = Get("/api/v1/namespaces", admin_).body;
  ASSERT_EQ(list["items"].size(), 2u) << list.dump();
  EXPECT_EQ(list["items"][0]["metadata"]["name"], "default");
  EXPECT_EQ(list["items"][1]["metadata"]["name"], "team-a");
  EXPECT_EQ(list["items"][1]["status"]["phase"], "Active");
  // A namespace that holds nothing and was never written is not there, as in Kubernetes.
  EXPECT_EQ(Get("/api/v1/namespaces/anything", admin_).status, 404);
  EXPECT_EQ(Get("/api/v1/namespaces/Bad_Name", admin_).status, 400);
  // Written (kubectl create namespace), with labels, it is listed with them.
  Reply made = Call(http::verb::post, "/api/v1/namespaces", admin_,
                    R"({"apiVersion":"v1","kind":"Namespace","metadata":{"name":"team-z",
                        "labels":{"tier":"gold"}},"spec":{},"status":{}})");
  ASSERT_EQ(made.status, 201) << made.raw;
  EXPECT_EQ(made.body["metadata"]["labels"]["kubernetes.io/metadata.name"], "team-z");
  EXPECT_EQ(
      Call(http::verb::post, "/api/v1/namespaces", admin_, R"({"metadata":{"name":"team-z"}})")
          .status,
      409);
  EXPECT_EQ(
      Call(http::verb::post, "/api/v1/namespaces", admin_, R"({"metadata":{"name":"a.b"}})").status,
      400);
  EXPECT_EQ(Get("/api/v1/namespaces?labelSelector=tier%3Dgold", admin_).body["items"].size(), 1u);
  // A namespace in use but never written takes labels (kubectl label namespace).
  Reply labelled =
      Call(http::verb::patch, "/api/v1/namespaces/team-a", admin_,
           R"({"metadata":{"labels":{"tier":"silver"}}})", "application/merge-patch+json");
  ASSERT_EQ(labelled.status, 201) << labelled.raw;
  EXPECT_EQ(Get("/api/v1/namespaces/team-a", admin_).body["metadata"]["labels"]["tier"], "silver");
  // A namespace token sees its own only, and writes none.
  const std::string team =
      Post("/apis/tessera.io/v1/tokens", admin_, {{"namespace", "team-b"}}).body["token"];
  const json mine = Get("/api/v1/namespaces", team).body;
  ASSERT_EQ(mine["items"].size(), 1u);
  EXPECT_EQ(mine["items"][0]["metadata"]["name"], "team-b");
  EXPECT_EQ(Get("/api/v1/namespaces/team-a", team).status, 403);
  EXPECT_EQ(
      Call(http::verb::post, "/api/v1/namespaces", team, R"({"metadata":{"name":"x"}})").status,
      403);
  EXPECT_EQ(Call(http::verb::delete_, "/api/v1/namespaces/team-b", team).status, 403);
  EXPECT_EQ(Table("/api/v1/namespaces")["rows"][1]["cells"][1], "Active");
  // Deleting a namespace deletes what is in it, in one write; default stays.
  Reply gone = Call(http::verb::delete_, "/api/v1/namespaces/team-a", admin_);
  ASSERT_EQ(gone.status, 200) << gone.raw;
  EXPECT_EQ(gone.body["status"]["phase"], "Terminating");
  EXPECT_EQ(Get(kJobs + "/j", admin_).status, 404);
  EXPECT_EQ(Get("/api/v1/namespaces/team-a", admin_).status, 404);
  EXPECT_EQ(Call(http::verb::delete_, "/api/v1/namespaces/team-a", admin_).status, 404);
  EXPECT_EQ(Call(http::verb::delete_, "/api/v1/namespaces/default", admin_).status, 403);
  list = Get("/api/v1/namespaces", admin_).body;
  ASSERT_EQ(list["items"].size(), 2u) << list.dump();
  EXPECT_EQ(list["items"][1]["metadata"]["name"], "team-z");
}

// Kueue's own objects, as kubectl get workloads,clusterqueues,localqueues shows them.
TEST_F(ApiServerTest, KueueWorkloadsAndQueueStatus) {
  const json cq = json::parse(R"({"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "ClusterQueue",
      "metadata": {"name": "gpus"}, "spec": {"resourceGroups": [{"coveredResources":
      ["nvidia.com/gpu"], "flavors": [{"name": "h100", "resources": [{"name": "nvidia.com/gpu",
      "nominalQuota": 8}]}]}]}})");
  ASSERT_EQ(Post("/apis/kueue.x-k8s.io/v1beta1/clusterqueues", admin_, cq).status, 201);
  const json lq = json::parse(R"({"apiVersion": "kueue.x-k8s.io/v1beta1", "kind": "LocalQueue",
      "metadata": {"name": "team-q"}, "spec": {"clusterQueue": "gpus"}})");
  ASSERT_EQ(Post("/apis/kueue.x-k8s.io/v1beta1/namespaces/team-a/localqueues", admin_, lq).status,
            201);
  for (const char* name : {"a", "b"}) {
    json job = json::parse(R"({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"labels":
        {"kueue.x-k8s.io/queue-name": "team-q"}}, "spec": {"suspend": true, "template": {"spec":
        {"containers": [{"name": "c", "image": "x", "resources": {"limits":
        {"nvidia.com/gpu": 2}}}]}}}})");
    job["metadata"]["name"] = name;
    ASSERT_EQ(Post("/apis/batch/v1/namespaces/team-a/jobs", admin_, job).status, 201);
  }
  // The scheduler admits a: its status, as the loop writes it.
  const std::string path = "/apis/tessera.io/v1/namespaces/team-a/jobs/a";
  json a = Get(path, admin_).body;
  a["spec"]["suspend"] = false;
  a["status"] = {{"phase", "Admitted"},
                 {"queue", "gpus"},
                 {"flavors", {{"nvidia.com/gpu", "h100"}}},
                 {"admittedAt", "2026-11-24T10:00:00.000Z"},
                 {"pods", {{{"name", "c-0"}, {"node", "n1"}}}}};
  ASSERT_EQ(Call(http::verb::put, path, admin_, a.dump()).status, 200);

  const json got = Get("/apis/kueue.x-k8s.io/v1beta1/clusterqueues/gpus", admin_).body;
  EXPECT_EQ(got["status"]["pendingWorkloads"], 1) << got.dump();
  EXPECT_EQ(got["status"]["admittedWorkloads"], 1);
  EXPECT_EQ(got["status"]["flavorsUsage"],
            json::parse(R"([{"name": "h100", "resources": [{"name": "nvidia.com/gpu",
                "total": "2"}]}])"));
  const json local =
      Get("/apis/kueue.x-k8s.io/v1beta1/namespaces/team-a/localqueues/team-q", admin_).body;
  EXPECT_EQ(local["status"]["pendingWorkloads"], 1);
  EXPECT_EQ(local["status"]["admittedWorkloads"], 1);

  const json workloads =
      Get("/apis/kueue.x-k8s.io/v1beta1/namespaces/team-a/workloads", admin_).body;
  ASSERT_EQ(workloads["items"].size(), 2u) << workloads.dump();
  const json& wa = workloads["items"][0];
  EXPECT_EQ(wa["metadata"]["name"], "job-a");
  EXPECT_EQ(wa["metadata"]["ownerReferences"][0]["apiVersion"], "batch/v1");
  EXPECT_EQ(wa["spec"]["queueName"], "team-q");
  EXPECT_EQ(wa["status"]["admission"]["clusterQueue"], "gpus");
  EXPECT_EQ(wa["status"]["admission"]["podSetAssignments"][0]["flavors"]["nvidia.com/gpu"], "h100");
  EXPECT_EQ(workloads["items"][1]["status"]["conditions"][0]["status"], "False");
  EXPECT_EQ(Get("/apis/kueue.x-k8s.io/v1beta1/namespaces/team-a/workloads/job-b", admin_).status,
            200);
  // Admission un-suspends the batch Job, as Kueue does.
  EXPECT_EQ(Get("/apis/batch/v1/namespaces/team-a/jobs/a", admin_).body["spec"]["suspend"], false);
  EXPECT_EQ(Get("/apis/batch/v1/namespaces/team-a/jobs/b", admin_).body["spec"]["suspend"], true);
  EXPECT_EQ(Call(http::verb::delete_,
                 "/apis/kueue.x-k8s.io/v1beta1/namespaces/team-a/workloads/job-b", admin_)
                .status,
            405);
}

}  // namespace
}  // namespace tessera::server

namespace tessera::server {
namespace {

// tessera exec through the API: the namespace's token opens a session on a running pod, the
// agent of its node claims it by long poll and sends the output and the end, which the client
// reads as a stream of frames.
TEST_F(ApiServerTest, ExecSessionsGoFromTheirClientToThePodsAgentAndBack) {
  const std::string kJob = "/apis/tessera.io/v1/namespaces/team-a/jobs/j";
  json job = JobObj("team-a", "j");
  job["spec"]["tasks"][0]["replicas"] = 2;
  ASSERT_EQ(Post("/apis/tessera.io/v1/namespaces/team-a/jobs", admin_, job).status, 201);
  job = Get(kJob, admin_).body;
  job["status"] = {{"phase", "Admitted"},
                   {"pods",
                    {{{"name", "main-0"}, {"node", "n1"}, {"state", {{"phase", "Running"}}}},
                     {{"name", "main-1"}, {"node", "n2"}}}}};
  Reply put = Call(http::verb::put, kJob, admin_, job.dump());
  ASSERT_EQ(put.status, 200) << put.raw;
  const std::string team =
      Post("/apis/tessera.io/v1/tokens", admin_, {{"namespace", "team-a"}}).body["token"];
  const std::string other =
      Post("/apis/tessera.io/v1/tokens", admin_, {{"namespace", "team-b"}}).body["token"];
  const std::string n1 =
      Post("/apis/tessera.io/v1/tokens", admin_, {{"role", "agent"}, {"node", "n1"}}).body["token"];
  const std::string n2 =
      Post("/apis/tessera.io/v1/tokens", admin_, {{"role", "agent"}, {"node", "n2"}}).body["token"];

  // Who may open one, and on what.
  const json cmd = {{"command", {"sh", "-c", "echo hi"}}};
  EXPECT_EQ(Post(kJob + "/exec", other, cmd).status, 403);
  EXPECT_EQ(Post(kJob + "/exec", n1, cmd).status, 403);
  EXPECT_EQ(Post(kJob + "/exec", team, {{"command", json::array()}}).status, 400);
  EXPECT_EQ(Post(kJob + "/exec", team, {{"command", {"ls"}}, {"stdin", true}}).status, 400);
  Reply not_running = Post(kJob + "/exec", team, {{"command", {"ls"}}, {"pod", "main-1"}});
  EXPECT_EQ(not_running.status, 412) << not_running.raw;
  EXPECT_NE(not_running.raw.find("main-1 is not running yet"), std::string::npos);
  Reply unknown = Post(kJob + "/exec", team, {{"command", {"ls"}}, {"pod", "main-7"}});
  EXPECT_EQ(unknown.status, 404);
  EXPECT_NE(unknown.raw.find("its pods: main-0, main-1"), std::string::npos) << unknown.raw;
  EXPECT_EQ(Post("/apis/tessera.io/v1/namespaces/team-a/jobs/nope/exec", team, cmd).status, 404);

  // Without a pod named: the first running one.
  Reply opened = Post(kJob + "/exec", team, cmd);
  ASSERT_EQ(opened.status, 201) << opened.raw;
  EXPECT_EQ(opened.body["pod"], "main-0");
  EXPECT_EQ(opened.body["node"], "n1");
  const std::string id = opened.body["id"];
  EXPECT_EQ(id.size(), 32u);
  const std::string session = "/apis/tessera.io/v1/execs/" + id;

  // Only n1's agent claims it, once; another node's cannot write to it.
  EXPECT_EQ(Get("/apis/tessera.io/v1/nodes/n1/execs", n2).status, 403);
  EXPECT_EQ(Get("/apis/tessera.io/v1/nodes/n1/execs", admin_).status, 403);
  Reply claimed = Get("/apis/tessera.io/v1/nodes/n1/execs?timeoutSeconds=1", n1);
  ASSERT_EQ(claimed.status, 200);
  ASSERT_EQ(claimed.body["items"].size(), 1u) << claimed.raw;
  EXPECT_EQ(claimed.body["items"][0]["id"], id);
  EXPECT_EQ(claimed.body["items"][0]["command"], cmd["command"]);
  // Nothing more: the poll ends empty after its timeout.
  Reply empty = Get("/apis/tessera.io/v1/nodes/n1/execs?timeoutSeconds=1", n1);
  EXPECT_EQ(empty.status, 200);
  EXPECT_EQ(empty.raw, "");
  EXPECT_EQ(Call(http::verb::post, session + "/output?stream=stdout", n2, "x").status, 404);
  EXPECT_EQ(Call(http::verb::post, session + "/output?stream=stdout", team, "x").status, 403);
  ASSERT_EQ(Call(http::verb::post, session + "/output?stream=stdout", n1, "hi\n").status, 200);
  EXPECT_EQ(Call(http::verb::post, session + "/end", n1, R"({"exitCode": 300})").status, 400);
  ASSERT_EQ(Call(http::verb::post, session + "/end", n1, R"({"exitCode": 0})").status, 200);

  // Only the token that opened it reads it, to its end.
  EXPECT_EQ(Get(session, other).status, 404);
  EXPECT_EQ(Get(session, admin_).status, 404);
  Reply out = Get(session, team);
  ASSERT_EQ(out.status, 200);
  EXPECT_EQ(out.raw, "{\"stdout\":\"hi\\n\"}\n{\"exitCode\":0}\n");
  EXPECT_EQ(api_->plane().exec().open_sessions(), 0u);

  // A client that leaves: the agent's next output is answered 410 Gone.
  opened = Post(kJob + "/exec", team, cmd);
  ASSERT_EQ(opened.status, 201);
  const std::string left = "/apis/tessera.io/v1/execs/" + opened.body["id"].get<std::string>();
  ASSERT_EQ(Get("/apis/tessera.io/v1/nodes/n1/execs", n1).body["items"].size(), 1u);
  api_->plane().exec().Abandon(opened.body["id"]);
  EXPECT_EQ(Call(http::verb::post, left + "/output?stream=stdout", n1, "x").status, 410);
}

// An MPI launcher's exec token: made for the agent of the launcher's node only, it runs commands
// in that Job's pods and nothing else, and not in a Job made again under the same name.
TEST_F(ApiServerTest, ExecTokensOfMpiLaunchersReachTheirJobOnly) {
  const std::string kJobs = "/apis/tessera.io/v1/namespaces/team-a/jobs";
  json job = JobObj("team-a", "pi");
  job["spec"]["tasks"] = {{{"name", "launcher"}, {"command", {"mpirun"}}},
                          {{"name", "worker"}, {"replicas", 2}, {"command", {"sleep", "1d"}}}};
  job["spec"]["mpi"] = {{"launcher", "launcher"}};
  Reply made = Post(kJobs, admin_, job);
  ASSERT_EQ(made.status, 201) << made.raw;
  job = made.body;
  job["status"] = {{"phase", "Admitted"},
                   {"pods",
                    {{{"name", "launcher-0"}, {"node", "n1"}, {"state", {{"phase", "Running"}}}},
                     {{"name", "worker-0"}, {"node", "n1"}, {"state", {{"phase", "Running"}}}},
                     {{"name", "worker-1"}, {"node", "n2"}, {"state", {{"phase", "Running"}}}}}}};
  ASSERT_EQ(Call(http::verb::put, kJobs + "/pi", admin_, job.dump()).status, 200);
  ASSERT_EQ(Post(kJobs, admin_, JobObj("team-a", "other")).status, 201);
  const std::string n1 =
      Post("/apis/tessera.io/v1/tokens", admin_, {{"role", "agent"}, {"node", "n1"}}).body["token"];
  const std::string n2 =
      Post("/apis/tessera.io/v1/tokens", admin_, {{"role", "agent"}, {"node", "n2"}}).body["token"];
  EXPECT_EQ(Call(http::verb::post, kJobs + "/pi/exectoken?pod=launcher-0", n2, "").status, 403);
  EXPECT_EQ(Call(http::verb::post, kJobs + "/pi/exectoken?pod=worker-0", n1, "").status, 403);
  EXPECT_EQ(Call(http::verb::post, kJobs + "/pi/exectoken?pod=launcher-0", admin_, "").status, 403);
  Reply minted = Call(http::verb::post, kJobs + "/pi/exectoken?pod=launcher-0", n1, "");
  ASSERT_EQ(minted.status, 201) << minted.raw;
  const std::string token = minted.body["token"];
  const json cmd = {{"command", {"orted"}}, {"pod", "worker-1"}};
  EXPECT_EQ(Post(kJobs + "/pi/exec", token, cmd).status, 201);
  EXPECT_EQ(Post(kJobs + "/other/exec", token, cmd).status, 403);
  EXPECT_EQ(Get(kJobs + "/pi", token).status, 403);
  EXPECT_EQ(Get(kJobs, token).status, 403);
  EXPECT_EQ(Post(kJobs, token, JobObj("team-a", "mine")).status, 403);
  EXPECT_EQ(Get("/apis/tessera.io/v1/tokens", token).status, 403);
  // While its Job runs it stays (the scheduling loop passes the running Jobs every cycle).
  const std::string uid = job["metadata"]["uid"];
  auto kept = api_->plane().RevokeExecTokens({"team-a/pi/" + uid});
  ASSERT_TRUE(kept.ok());
  EXPECT_EQ(*kept, 0);
  EXPECT_EQ(Post(kJobs + "/pi/exec", token, cmd).status, 201);
  ASSERT_EQ(Call(http::verb::delete_, kJobs + "/pi", admin_).status, 200);
  json again = JobObj("team-a", "pi");
  ASSERT_EQ(Post(kJobs, admin_, again).status, 201);
  EXPECT_EQ(Post(kJobs + "/pi/exec", token, cmd).status, 403);
  // Its Job gone, the token goes too.
  auto revoked = api_->plane().RevokeExecTokens({});
  ASSERT_TRUE(revoked.ok());
  EXPECT_EQ(*revoked, 1);
  EXPECT_EQ(Post(kJobs + "/pi/exec", token, cmd).status, 401);
  EXPECT_EQ(Get("/apis/tessera.io/v1/tokens", admin_).raw.find("\"exec\""), std::string::npos);
}

}  // namespace
}  // namespace tessera::server
