// Least privilege as a full matrix: every principal x verb x kind x namespace, each cell asserted
// against the rules of docs/SECURITY.md (written out here independently of the server's code),
// then the endpoints outside the object paths and the object-level rules.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>
#include <vector>

#include "api/object.h"
#include "server/api_server.h"
#include "server/auth.h"
#include "server/test_store.h"

namespace tessera::server {
namespace {

using nlohmann::json;

enum class Who { kAdmin, kTeamA, kAgentN1, kJoin, kMetrics };
enum class Op { kList, kGet, kWatch, kCreate, kReplace, kDelete };
enum class Where { kOwn, kOther, kCluster };  // team-a, team-b, cluster-scoped

const char* Name(Who w) {
  switch (w) {
    case Who::kAdmin:
      return "admin";
    case Who::kTeamA:
      return "namespace team-a";
    case Who::kAgentN1:
      return "agent n1";
    case Who::kJoin:
      return "join";
    case Who::kMetrics:
      return "metrics";
  }
  return "?";
}
const char* Name(Op o) {
  static const char* names[] = {"list", "get", "watch", "create", "replace", "delete"};
  return names[static_cast<int>(o)];
}

// The rules, cell by cell: true = allowed.
bool Allowed(Who who, Op op, std::string_view kind, Where where) {
  const bool read = op == Op::kList || op == Op::kGet || op == Op::kWatch;
  switch (who) {
    case Who::kAdmin:
      return true;
    case Who::kTeamA:
      if (where != Where::kOwn) return false;
      if (kind == "Job" || kind == "PodGroup" || kind == "LocalQueue") return true;
      return (kind == "Event" || kind == "NamespaceQuota") && read;
    case Who::kAgentN1:
      // The matrix's objects are not n1's and no Job is bound to n1 here: an agent may list and
      // watch Jobs (and sees none of these), nothing else. Its own node and bound jobs are
      // tested below, its watch in ApiServerTest.AnAgentsWatchShowsTheJobsBoundToItsNodeOnly.
      return kind == "Job" && (op == Op::kList || op == Op::kWatch);
    case Who::kJoin:
    case Who::kMetrics:
      return false;
  }
  return false;
}

json Sample(std::string_view kind, const std::string& ns, const std::string& name) {
  json meta = {{"name", name}};
  if (!ns.empty()) meta["namespace"] = ns;
  json spec = json::object();
  if (kind == "Job") spec = {{"tasks", {{{"name", "main"}, {"command", {"true"}}}}}};
  if (kind == "PodGroup") spec = {{"minMember", 1}};
  if (kind == "Event") {
    spec = {{"type", "Normal"},
            {"reason", "Test"},
            {"involvedObject", {{"kind", "Node"}, {"name", "n1"}}}};
  }
  if (kind == "LocalQueue") spec = {{"clusterQueue", "q-open"}};
  if (kind == "NamespaceQuota") spec = {{"hard", {{"requests.nvidia.com/gpu", "4"}}}};
  if (kind == "PriorityClass") spec = {{"value", 10}};
  if (kind == "GpuSharingConfig") spec = {{"default", true}, {"exclusive", json::object()}};
  return {{"apiVersion", "tessera.io/v1"}, {"kind", kind}, {"metadata", meta}, {"spec", spec}};
}

class AuthMatrixTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/tessera-auth-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    api_ = ApiServer::Open(dir_, TestStore()).value();
    std::ifstream in(dir_ + "/admin.token");
    std::getline(in, tokens_[Who::kAdmin]);
    tokens_[Who::kTeamA] = Mint(R"({"namespace": "team-a"})");
    tokens_[Who::kAgentN1] = Mint(R"({"role": "agent", "node": "n1"})");
    tokens_[Who::kJoin] = Mint(R"({"role": "agent"})");
    tokens_[Who::kMetrics] = Mint(R"({"role": "metrics"})");
    for (const char* q : {"q-open", "q-closed"}) {
      json queue = Sample("Queue", "", q);
      if (std::string(q) == "q-open") queue["spec"]["allowedNamespaces"] = {"team-a"};
      ASSERT_EQ(Call(Who::kAdmin, "POST", "/apis/tessera.io/v1/queues", queue.dump()).status, 201);
    }
  }
  void TearDown() override {
    api_.reset();
    std::filesystem::remove_all(dir_);
  }

  std::string Mint(const std::string& body) {
    HttpResponse r = Call(Who::kAdmin, "POST", "/apis/tessera.io/v1/tokens", body);
    EXPECT_EQ(r.status, 201) << r.body;
    return json::parse(r.body)["token"];
  }
  HttpResponse Call(Who who, const std::string& method, const std::string& path,
                    const std::string& body = "") {
    return CallWith(tokens_[who], method, path, body);
  }
  HttpResponse CallWith(const std::string& token, const std::string& method,
                        const std::string& path, const std::string& body = "") {
    HttpRequest r;
    r.method = method;
    r.path = path.substr(0, path.find('?'));
    if (path.find('?') != std::string::npos) ParseQuery(path.substr(path.find('?') + 1), &r.query);
    r.authorization = "Bearer " + token;
    r.content_type = "application/json";
    r.body = body;
    return api_->Handle(r);
  }
  // Puts (as the admin) a fresh object named "pre" in place for the next principal.
  void Reset(std::string_view kind, const std::string& ns) {
    json obj = Sample(kind, ns, "pre");
    HttpRequest r;
    ASSERT_EQ(Call(Who::kAdmin, "POST", "/apis/tessera.io/v1/apply", obj.dump()).status, 200);
  }

  std::string dir_;
  std::unique_ptr<ApiServer> api_;
  std::map<Who, std::string> tokens_;
};

// The digest stored for a token's secret (FIPS 180-2's test vectors), the same on every call
// and thread (each thread reuses its own context).
TEST(Sha256HexTest, MatchesTheStandardsVectorsOnEveryThread) {
  auto check = [] {
    for (int i = 0; i < 3; ++i) {
      EXPECT_EQ(Sha256Hex("abc"),
                "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
      EXPECT_EQ(Sha256Hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    }
  };
  check();
  std::thread other(check);
  other.join();
}

TEST_F(AuthMatrixTest, EveryPrincipalVerbKindAndNamespace) {
  int cells = 0;
  for (const api::KindInfo& k : api::Kinds()) {
    const std::string kind(k.kind);
    const std::vector<Where> wheres = k.namespaced ? std::vector<Where>{Where::kOwn, Where::kOther}
                                                   : std::vector<Where>{Where::kCluster};
    for (Where where : wheres) {
      const std::string ns = where == Where::kOwn     ? "team-a"
                             : where == Where::kOther ? "team-b"
                                                      : "";
      const std::string base = "/apis/tessera.io/v1/" +
                               (ns.empty() ? "" : "namespaces/" + ns + "/") + std::string(k.plural);
      for (Who who : {Who::kAdmin, Who::kTeamA, Who::kAgentN1, Who::kJoin, Who::kMetrics}) {
        for (Op op : {Op::kList, Op::kGet, Op::kWatch, Op::kCreate, Op::kReplace, Op::kDelete}) {
          Reset(kind, ns);
          const std::string name = std::string("m-") + std::to_string(cells);
          HttpResponse r;
          switch (op) {
            case Op::kList:
              r = Call(who, "GET", base);
              break;
            case Op::kGet:
              r = Call(who, "GET", base + "/pre");
              break;
            case Op::kWatch:
              r = Call(who, "GET", base + "?watch=1");
              if (r.stream) r.stream->Cancel();
              break;
            case Op::kCreate:
              r = Call(who, "POST", base, Sample(kind, ns, name).dump());
              break;
            case Op::kReplace:
              r = Call(who, "PUT", base + "/pre", Sample(kind, ns, "pre").dump());
              break;
            case Op::kDelete:
              r = Call(who, "DELETE", base + "/pre");
              break;
          }
          ++cells;
          const bool want = Allowed(who, op, kind, where);
          const std::string cell = std::string(Name(who)) + " " + Name(op) + " " + kind + " in " +
                                   (ns.empty() ? "(cluster)" : ns) + ": " +
                                   std::to_string(r.status) + " " + r.body.substr(0, 200);
          // A Job not bound to the agent's node does not exist for it.
          const int refused = who == Who::kAgentN1 && kind == "Job" && op == Op::kGet ? 404 : 403;
          if (want) {
            EXPECT_TRUE(r.status >= 200 && r.status < 300) << cell;
          } else {
            EXPECT_EQ(r.status, refused) << cell;
            // Nothing was written by a refused write.
            if (op == Op::kCreate) {
              EXPECT_EQ(Call(Who::kAdmin, "GET", base + "/" + name).status, 404) << cell;
            }
            if (op == Op::kDelete) {
              EXPECT_EQ(Call(Who::kAdmin, "GET", base + "/pre").status, 200);
            }
          }
          // An agent's list of Jobs holds only the Jobs bound to its node: none of these.
          if (who == Who::kAgentN1 && op == Op::kList && r.status == 200) {
            EXPECT_TRUE(json::parse(r.body)["items"].empty()) << cell;
          }
        }
      }
    }
  }
  // 13 kinds: 5 namespaced in 2 namespaces, 8 cluster-scoped; 5 principals; 6 verbs. (An
  // agent's own Lease, named as its node, is tested in HardeningTest.)
  EXPECT_EQ(cells, (5 * 2 + 8) * 5 * 6);
}

TEST_F(AuthMatrixTest, EndpointsOutsideTheObjectPaths) {
  struct Case {
    std::string method, path, body;
    std::map<Who, int> want;
  };
  const std::vector<Case> cases = {
      {"GET",
       "/metrics",
       "",
       {{Who::kAdmin, 200},
        {Who::kTeamA, 200},
        {Who::kAgentN1, 403},
        {Who::kJoin, 403},
        {Who::kMetrics, 200}}},
      {"GET",
       "/apis/tessera.io/v1/usage",
       "",
       {{Who::kAdmin, 200},
        {Who::kTeamA, 200},
        {Who::kAgentN1, 403},
        {Who::kJoin, 403},
        {Who::kMetrics, 403}}},
      {"GET",
       "/apis/tessera.io/v1/tokens",
       "",
       {{Who::kAdmin, 200},
        {Who::kTeamA, 403},
        {Who::kAgentN1, 403},
        {Who::kJoin, 403},
        {Who::kMetrics, 403}}},
      {"POST",
       "/apis/tessera.io/v1/tokens",
       R"({"namespace": "team-b"})",
       {{Who::kAdmin, 201},
        {Who::kTeamA, 403},
        {Who::kAgentN1, 403},
        {Who::kJoin, 403},
        {Who::kMetrics, 403}}},
      {"DELETE",
       "/apis/tessera.io/v1/tokens/nosuch",
       "",
       {{Who::kAdmin, 404},
        {Who::kTeamA, 403},
        {Who::kAgentN1, 403},
        {Who::kJoin, 403},
        {Who::kMetrics, 403}}},
      {"GET",
       "/apis/tessera.io/v1/namespaces/team-a/jobs/nosuch/logs",
       "",
       {{Who::kAdmin, 404},
        {Who::kTeamA, 404},
        {Who::kAgentN1, 403},
        {Who::kJoin, 403},
        {Who::kMetrics, 403}}},
      {"GET",
       "/apis/tessera.io/v1/namespaces/team-b/jobs/nosuch/logs",
       "",
       {{Who::kAdmin, 404},
        {Who::kTeamA, 403},
        {Who::kAgentN1, 403},
        {Who::kJoin, 403},
        {Who::kMetrics, 403}}},
      {"POST",
       "/apis/tessera.io/v1/namespaces/team-a/jobs/nosuch/logs?pod=p-0",
       "shipped",
       {{Who::kAdmin, 404},  // a log belongs to a Job: none here
        {Who::kTeamA, 403},
        {Who::kAgentN1, 403},
        {Who::kJoin, 403},
        {Who::kMetrics, 403}}},
  };
  Reset("Job", "team-a");
  for (const Case& c : cases) {
    for (const auto& [who, code] : c.want) {
      HttpResponse r = Call(who, c.method, c.path, c.body);
      EXPECT_EQ(r.status, code) << Name(who) << " " << c.method << " " << c.path << ": " << r.body;
    }
  }
  EXPECT_EQ(CallWith("", "GET", "/apis/tessera.io/v1/jobs").status, 401);
  EXPECT_EQ(CallWith("nosuch.secret", "GET", "/apis/tessera.io/v1/jobs").status, 401);
}

TEST_F(AuthMatrixTest, ObjectLevelRules) {
  // A namespace token: LocalQueues only onto Queues open to it.
  json lq = Sample("LocalQueue", "team-a", "mine");
  EXPECT_EQ(
      Call(Who::kTeamA, "POST", "/apis/tessera.io/v1/namespaces/team-a/localqueues", lq.dump())
          .status,
      201);
  lq["metadata"]["name"] = "theirs";
  lq["spec"]["clusterQueue"] = "q-closed";
  HttpResponse r =
      Call(Who::kTeamA, "POST", "/apis/tessera.io/v1/namespaces/team-a/localqueues", lq.dump());
  EXPECT_EQ(r.status, 403);
  EXPECT_NE(r.body.find("allowedNamespaces"), std::string::npos) << r.body;
  EXPECT_EQ(Call(Who::kTeamA, "POST", "/apis/tessera.io/v1/apply", lq.dump()).status, 403);
  // A namespace token cannot lift its own quota.
  ASSERT_EQ(Call(Who::kAdmin, "POST", "/apis/tessera.io/v1/apply",
                 Sample("NamespaceQuota", "team-a", "q").dump())
                .status,
            200);
  EXPECT_EQ(
      Call(Who::kTeamA, "DELETE", "/apis/tessera.io/v1/namespaces/team-a/namespacequotas/q").status,
      403);
  EXPECT_EQ(Call(Who::kTeamA, "POST", "/apis/tessera.io/v1/apply",
                 Sample("NamespaceQuota", "team-a", "q").dump())
                .status,
            403);

  // The agent of n1: its own Node only.
  json node = Sample("Node", "", "n1");
  EXPECT_EQ(Call(Who::kAgentN1, "POST", "/apis/tessera.io/v1/nodes", node.dump()).status, 201);
  EXPECT_EQ(Call(Who::kAgentN1, "GET", "/apis/tessera.io/v1/nodes/n1").status, 200);
  EXPECT_EQ(Call(Who::kAgentN1, "PUT", "/apis/tessera.io/v1/nodes/n1", node.dump()).status, 200);
  EXPECT_EQ(
      Call(Who::kAgentN1, "POST", "/apis/tessera.io/v1/nodes", Sample("Node", "", "n2").dump())
          .status,
      403);
  EXPECT_EQ(
      Call(Who::kAgentN1, "POST", "/apis/tessera.io/v1/apply", Sample("Node", "", "n2").dump())
          .status,
      403);
  // Events about its node, in tessera-system; no others.
  EXPECT_EQ(Call(Who::kAgentN1, "POST", "/apis/tessera.io/v1/apply",
                 Sample("Event", "tessera-system", "gpu-1").dump())
                .status,
            200);
  json other_event = Sample("Event", "tessera-system", "gpu-2");
  other_event["spec"]["involvedObject"]["name"] = "n2";
  EXPECT_EQ(Call(Who::kAgentN1, "POST", "/apis/tessera.io/v1/apply", other_event.dump()).status,
            403);

  // Jobs bound to n1: readable, their pods' state writable, nothing else.
  json job = Sample("Job", "team-a", "bound");
  job["spec"]["tasks"][0]["replicas"] = 2;
  job["status"] = {
      {"phase", "Admitted"},
      {"queue", "q-open"},
      {"pods", {{{"name", "main-0"}, {"node", "n1"}}, {{"name", "main-1"}, {"node", "n2"}}}}};
  ASSERT_EQ(Call(Who::kAdmin, "POST", "/apis/tessera.io/v1/apply", job.dump()).status, 200);
  const std::string path = "/apis/tessera.io/v1/namespaces/team-a/jobs/bound";
  r = Call(Who::kAgentN1, "GET", "/apis/tessera.io/v1/jobs");
  ASSERT_EQ(r.status, 200);
  ASSERT_EQ(json::parse(r.body)["items"].size(), 1u);
  json got = json::parse(Call(Who::kAgentN1, "GET", path).body);
  got["status"]["pods"][0]["state"] = {{"phase", "Running"}, {"restarts", 0}};
  EXPECT_EQ(Call(Who::kAgentN1, "PUT", path, got.dump()).status, 200);
  got = json::parse(Call(Who::kAgentN1, "GET", path).body);
  EXPECT_EQ(got["status"]["pods"][0]["state"]["phase"], "Running");
  for (auto edit : std::vector<std::function<void(json&)>>{
           [](json& j) {
             j["status"]["pods"][1]["state"] = {{"phase", "Failed"}};
           },
           [](json& j) { j["status"]["pods"][0]["node"] = "n9"; },
           [](json& j) { j["status"]["queue"] = "q-closed"; },
           [](json& j) { j["status"]["phase"] = "Pending"; }}) {
    json bad = got;
    bad["metadata"].erase("resourceVersion");
    edit(bad);
    r = Call(Who::kAgentN1, "PUT", path, bad.dump());
    EXPECT_EQ(r.status, 403) << bad["status"].dump() << " " << r.body;
  }
  // A report read before another node's pod changed conflicts (409: read again), rather than
  // reading as a forbidden change of that pod.
  json stale = got;
  stale["status"]["pods"][0]["state"] = {{"phase", "Running"}, {"restarts", 1}};
  json other = got;
  other["status"]["pods"][1]["state"] = {{"phase", "Running"}, {"restarts", 0}};
  ASSERT_EQ(Call(Who::kAdmin, "PUT", path, other.dump()).status, 200);
  r = Call(Who::kAgentN1, "PUT", path, stale.dump());
  EXPECT_EQ(r.status, 409) << r.body;
  got = json::parse(Call(Who::kAgentN1, "GET", path).body);
  stale = got;
  stale["status"]["pods"][0]["state"] = {{"phase", "Running"}, {"restarts", 1}};
  EXPECT_EQ(Call(Who::kAgentN1, "PUT", path, stale.dump()).status, 200);
  // The spec stays as stored whatever an agent sends.
  json sneaky = got;
  sneaky["metadata"].erase("resourceVersion");
  sneaky["spec"]["tasks"][0]["command"] = {"sh", "-c", "curl evil"};
  sneaky["status"]["phase"] = "Succeeded";
  EXPECT_EQ(Call(Who::kAgentN1, "PUT", path, sneaky.dump()).status, 200);
  got = json::parse(Call(Who::kAdmin, "GET", path).body);
  EXPECT_EQ(got["spec"]["tasks"][0]["command"], json({"true"}));
  EXPECT_EQ(got["status"]["phase"], "Succeeded");
  // Logs: only for main-0, the pod on n1.
  EXPECT_EQ(Call(Who::kAgentN1, "POST", path + "/logs?pod=main-0", "ok\n").status, 200);
  EXPECT_EQ(Call(Who::kAgentN1, "POST", path + "/logs?pod=main-1", "forged\n").status, 403);

  // A join token mints n3's first token, once.
  r = Call(Who::kJoin, "POST", "/apis/tessera.io/v1/tokens", R"({"role": "agent", "node": "n3"})");
  ASSERT_EQ(r.status, 201) << r.body;
  const std::string n3 = json::parse(r.body)["token"];
  EXPECT_EQ(CallWith(n3, "GET", "/apis/tessera.io/v1/nodes/n3").status,
            404);  // allowed, not there yet
  EXPECT_EQ(
      Call(Who::kJoin, "POST", "/apis/tessera.io/v1/tokens", R"({"role": "agent", "node": "n3"})")
          .status,
      409);
  EXPECT_EQ(
      Call(Who::kJoin, "POST", "/apis/tessera.io/v1/tokens", R"({"role": "agent", "node": "n1"})")
          .status,
      409);
  EXPECT_EQ(
      Call(Who::kJoin, "POST", "/apis/tessera.io/v1/tokens", R"({"namespace": "team-a"})").status,
      403);

  // A token known to the server (used above) with another secret is still refused.
  const std::string id = n3.substr(0, n3.find('.'));
  EXPECT_EQ(CallWith(id + "." + std::string(64, '0'), "GET", "/apis/tessera.io/v1/nodes/n3").status,
            401);
  // Revocation acts on the next request.
  EXPECT_EQ(Call(Who::kAdmin, "DELETE", "/apis/tessera.io/v1/tokens/" + id).status, 200);
  EXPECT_EQ(CallWith(n3, "GET", "/apis/tessera.io/v1/nodes/n3").status, 401);
  EXPECT_EQ(Call(Who::kAdmin, "DELETE", "/apis/tessera.io/v1/tokens/admin").status, 412);
  const json list = json::parse(Call(Who::kAdmin, "GET", "/apis/tessera.io/v1/tokens").body);
  for (const json& t : list["items"]) {
    EXPECT_FALSE(t.contains("sha256")) << t.dump();
    EXPECT_NE(t["id"], id);
  }
}

// The Lease hook of the agent's write strategy: an agent renews its own node's Lease only, and
// the server stamps the holder and the renewal with its own clock, whatever the agent sent.
TEST_F(AuthMatrixTest, AnAgentRenewsItsOwnLeaseStampedByTheServer) {
  auto lease = [](const std::string& node) {
    return json{{"apiVersion", "tessera.io/v1"},
                {"kind", "Lease"},
                {"metadata", {{"name", node}}},
                {"spec", {{"holderIdentity", "someone"}, {"renewTime", "2001-01-01T00:00:00Z"}}}};
  };
  HttpResponse r = Call(Who::kAgentN1, "POST", "/apis/tessera.io/v1/leases", lease("n2").dump());
  EXPECT_EQ(r.status, 403) << r.body;
  EXPECT_NE(r.body.find("renews the lease of node n1 only"), std::string::npos) << r.body;
  r = Call(Who::kAgentN1, "POST", "/apis/tessera.io/v1/leases", lease("n1").dump());
  ASSERT_EQ(r.status, 201) << r.body;
  const json stored = json::parse(Call(Who::kAdmin, "GET", "/apis/tessera.io/v1/leases/n1").body);
  EXPECT_EQ(stored["spec"]["holderIdentity"], "n1");
  EXPECT_NE(stored["spec"]["renewTime"], "2001-01-01T00:00:00Z");
}

TEST_F(AuthMatrixTest, MetricsForANamespaceTokenShowOnlyItsNamespace) {
  for (const char* ns : {"team-a", "team-b"}) {
    json job = Sample("Job", ns, std::string("job-") + ns);
    job["spec"]["tasks"][0]["resources"] = {{"limits", {{"nvidia.com/gpu", 1}}}};
    job["status"] = {{"phase", "Admitted"},
                     {"queue", "q-open"},
                     {"pods",
                      {{{"name", "main-0"},
                        {"node", "n1"},
                        {"devices",
                         {{{"gpu", 0},
                           {"uuid", std::string("GPU-") + ns},
                           {"kind", "whole"},
                           {"gpuMilli", 1000}}}}}}}};
    ASSERT_EQ(Call(Who::kAdmin, "POST", "/apis/tessera.io/v1/apply", job.dump()).status, 200);
  }
  const std::string all = Call(Who::kMetrics, "GET", "/metrics").body;
  EXPECT_NE(all.find("namespace=\"team-b\""), std::string::npos);
  const std::string mine = Call(Who::kTeamA, "GET", "/metrics").body;
  EXPECT_NE(mine.find("tessera_namespace_gpus_allocated{namespace=\"team-a\"} 1"),
            std::string::npos)
      << mine;
  EXPECT_EQ(mine.find("team-b"), std::string::npos) << mine;
  EXPECT_EQ(mine.find("q-open"), std::string::npos) << mine;
}

}  // namespace
}  // namespace tessera::server
