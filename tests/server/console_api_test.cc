// What the web console reads besides the usual kinds: its own files (server/console.h), the
// GPUs as the scheduler offers them (server/gpu_list.cc) and the queues' order of waiting work
// (server/pending_workloads.cc, from the loop's QueueOrderBook).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "loop_fixture.h"
#include "server/console.h"

namespace tessera::server {
namespace {

using nlohmann::json;

HttpRequest Request(const std::string& method, const std::string& path,
                    const std::string& token = "") {
  HttpRequest r;
  r.method = method;
  r.path = path.substr(0, path.find('?'));
  if (path.find('?') != std::string::npos) ParseQuery(path.substr(path.find('?') + 1), &r.query);
  if (!token.empty()) r.authorization = "Bearer " + token;
  return r;
}

std::string Header(const HttpResponse& r, const std::string& name) {
  for (const auto& [k, v] : r.headers) {
    if (k == name) return v;
  }
  return "";
}

class ConsoleApiTest : public LoopTest {
 protected:
  HttpResponse Call(const std::string& method, const std::string& path, const std::string& token) {
    return api_->Handle(Request(method, path, token));
  }
  std::string NamespaceToken(const std::string& ns) {
    HttpRequest r = Request("POST", "/apis/tessera.io/v1/tokens", admin_);
    r.content_type = "application/json";
    r.body = json{{"namespace", ns}}.dump();
    HttpResponse out = api_->Handle(r);
    EXPECT_EQ(out.status, 201) << out.body;
    return json::parse(out.body).value("token", "");
  }
  // One pod asking for `gpus` whole GPUs, of priority class `pc` when given.
  void ApplyPod(const std::string& name, int gpus, const std::string& ns = "default",
                const std::string& pc = "") {
    Apply("apiVersion: v1\nkind: Pod\nmetadata: {name: " + name + ", namespace: " + ns +
          "}\nspec:\n" + (pc.empty() ? "" : "  priorityClassName: " + pc + "\n") +
          "  containers:\n  - name: c\n    resources: {limits: {nvidia.com/gpu: " +
          std::to_string(gpus) + "}}\n");
    now_ += 1000;  // each created a second after the one before
    api_->set_clock([this] { return now_; });
  }
};

TEST_F(ConsoleApiTest, TheConsoleIsServedWithAStrictPolicyAndNoToken) {
  HttpResponse r = ServeConsole(Request("GET", "/ui")).value();
  EXPECT_EQ(r.status, 308);
  EXPECT_EQ(Header(r, "Location"), "/ui/");
  r = Call("GET", "/ui/", "");
  EXPECT_EQ(r.status, 200);
  EXPECT_EQ(r.content_type, "text/html; charset=utf-8");
  EXPECT_NE(r.body.find("js/app.js"), std::string::npos);
  const std::string policy = Header(r, "Content-Security-Policy");
  EXPECT_NE(policy.find("script-src 'self'"), std::string::npos) << policy;
  EXPECT_NE(policy.find("connect-src 'self'"), std::string::npos) << policy;
  EXPECT_NE(policy.find("frame-ancestors 'none'"), std::string::npos) << policy;
  EXPECT_EQ(policy.find("unsafe-inline"), std::string::npos) << policy;
  EXPECT_EQ(Header(r, "X-Content-Type-Options"), "nosniff");
  // Every script and the chart library are in the binary.
  for (const char* f : {"js/app.js", "js/api.js", "js/gpumap.js", "vendor/dygraph.min.js"}) {
    r = Call("GET", std::string("/ui/") + f, "");
    EXPECT_EQ(r.status, 200) << f;
    EXPECT_EQ(r.content_type, "text/javascript; charset=utf-8") << f;
    EXPECT_GT(r.body.size(), 100u) << f;
  }
  EXPECT_EQ(Call("GET", "/ui/console.css", "").content_type, "text/css; charset=utf-8");
  EXPECT_EQ(Call("GET", "/ui/../admin.token", "").status, 404);
  EXPECT_EQ(Call("GET", "/ui/js/nope.js", "").status, 404);
  EXPECT_EQ(Call("POST", "/ui/", "").status, 405);
  // The data is not: the API still wants a token.
  EXPECT_EQ(Call("GET", "/apis/tessera.io/v1/gpus", "").status, 401);
  EXPECT_FALSE(ServeConsole(Request("GET", "/uix")).has_value());
}

TEST_F(ConsoleApiTest, GpusAreListedAsTheSchedulerOffersThem) {
  ApplyNode("n1", 3);
  Apply(R"(
apiVersion: tessera.io/v1
kind: GpuSharingConfig
metadata: {name: mig}
spec: {gpus: ["0"], mig: {layout: {3g.40gb: 1, 1g.10gb: 4}}}
---
apiVersion: tessera.io/v1
kind: GpuSharingConfig
metadata: {name: slices}
spec: {gpus: ["GPU-1"], timeSlicing: {replicas: 4}}
)");
  json n1 = Get("/apis/tessera.io/v1/nodes/n1");
  n1["metadata"]["annotations"]["tessera.io/cordoned-gpus"] = "GPU-2";
  HttpRequest put = Request("PUT", "/apis/tessera.io/v1/nodes/n1", admin_);
  put.content_type = "application/json";
  put.body = n1.dump();
  ASSERT_EQ(api_->Handle(put).status, 200);

  const json gpus = Get("/apis/tessera.io/v1/gpus");
  ASSERT_EQ(gpus["items"].size(), 3u) << gpus.dump();
  const json& g0 = gpus["items"][0];
  EXPECT_EQ(g0["mode"], "mig");
  EXPECT_EQ(g0["memorySlices"], 8);
  ASSERT_EQ(g0["mig"].size(), 5u) << g0.dump();
  // Each instance where the scheduler placed it: memory slices 0-3 for the four 1g.10gb, the
  // 3g.40gb on the four after them; instance numbers as bindings name them.
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(g0["mig"][i]["profile"], "1g.10gb");
    EXPECT_EQ(g0["mig"][i]["start"], i);
    EXPECT_EQ(g0["mig"][i]["instance"], i);
  }
  EXPECT_EQ(g0["mig"][4]["profile"], "3g.40gb");
  EXPECT_EQ(g0["mig"][4]["start"], 4);
  EXPECT_EQ(g0["mig"][4]["memorySlices"], 4);
  EXPECT_EQ(g0["mig"][4]["computeSlices"], 3);
  EXPECT_EQ(gpus["items"][1]["mode"], "timeslice");
  EXPECT_EQ(gpus["items"][1]["replicas"], 4);
  EXPECT_EQ(gpus["items"][2]["mode"], "exclusive");
  EXPECT_EQ(gpus["items"][2]["health"], "Cordoned");
  EXPECT_EQ(gpus["items"][2]["cordoned"], true);
  EXPECT_FALSE(gpus["items"][1].contains("cordoned"));
  EXPECT_EQ(Get("/apis/tessera.io/v1/gpus?node=nope")["items"].size(), 0u);

  // Nodes are the admin's: a namespace token reads no GPU list.
  EXPECT_EQ(Call("GET", "/apis/tessera.io/v1/gpus", NamespaceToken("team-a")).status, 403);
}

TEST_F(ConsoleApiTest, WaitingWorkIsListedInTheQueuesOrder) {
  const std::string path = "/apis/tessera.io/v1/pendingworkloads";
  // Before this replica has run a cycle it knows no order, and says so.
  EXPECT_EQ(Call("GET", path, admin_).status, 503);

  ApplyNode("n1", 2);
  Apply(R"(
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: high}
value: 1000
)");
  // Of the high class too: nothing below it is preempted for the high one.
  ApplyPod("running", 2, "default", "high");
  Cycle();
  ApplyPod("older", 2);
  ApplyPod("tenant", 1, "team-a");
  ApplyPod("newer-but-high", 2, "default", "high");
  ApplyPod("too-big", 4);
  Cycle();

  const json all = Get(path);
  ASSERT_EQ(all["items"].size(), 4u) << all.dump(2);
  auto row = [&](const std::string& name) {
    for (const json& i : all["items"]) {
      if (i["metadata"]["name"] == name) return i;
    }
    ADD_FAILURE() << name << " not listed: " << all.dump(2);
    return json::object();
  };
  // Priority first, then age: the high one heads the queue though created later.
  EXPECT_EQ(row("newer-but-high")["positionInClusterQueue"], 1);
  EXPECT_EQ(row("newer-but-high")["priority"], 1000);
  EXPECT_EQ(row("older")["positionInClusterQueue"], 2);
  EXPECT_EQ(row("tenant")["positionInClusterQueue"], 3);
  EXPECT_EQ(row("too-big")["positionInClusterQueue"], 4);
  EXPECT_EQ(row("older")["waitingInClusterQueue"], 4);
  EXPECT_EQ(row("older")["queue"], "tessera-unqueued");
  // The blocked head was searched for room: it fits once the running job ends. Of the others,
  // the one asking more GPUs than the node has can never fit; the rest were not searched.
  EXPECT_EQ(row("newer-but-high")["fitsWhenRunningWorkEnds"], true) << all.dump(2);
  EXPECT_FALSE(row("older").contains("fitsWhenRunningWorkEnds"));
  EXPECT_EQ(row("too-big")["fitsWhenRunningWorkEnds"], false) << all.dump(2);
  // The scheduler's own words, as on the Job.
  EXPECT_EQ(row("older")["reason"], Job("older")["status"]["message"]);
  EXPECT_EQ(all["metadata"]["total"], 4);

  // Paging.
  const json page = Get(path + "?limit=2&offset=1");
  ASSERT_EQ(page["items"].size(), 2u);
  EXPECT_EQ(page["items"][0]["metadata"]["name"], "older");
  EXPECT_EQ(Call("GET", path + "?limit=-1", admin_).status, 400);
  EXPECT_EQ(Get(path + "?queue=nope")["items"].size(), 0u);

  // A namespace token: its own Jobs, placed among everyone's; no other namespace.
  const std::string team_a = NamespaceToken("team-a");
  HttpResponse mine = Call("GET", path, team_a);
  ASSERT_EQ(mine.status, 200) << mine.body;
  const json own = json::parse(mine.body);
  ASSERT_EQ(own["items"].size(), 1u) << own.dump();
  EXPECT_EQ(own["items"][0]["metadata"]["name"], "tenant");
  EXPECT_EQ(own["items"][0]["positionInClusterQueue"], 3);
  EXPECT_EQ(Call("GET", path + "?namespace=default", team_a).status, 403);

  // The head that can never fit says so.
  DeleteJob("newer-but-high");
  DeleteJob("older");
  DeleteJob("tenant", "team-a");
  Cycle();
  const json left = Get(path);
  ASSERT_EQ(left["items"].size(), 1u) << left.dump();
  EXPECT_EQ(left["items"][0]["fitsWhenRunningWorkEnds"], false) << left.dump();
}

TEST_F(ConsoleApiTest, QuotasShowUseBorrowingAndLendingInTheCohort) {
  EXPECT_EQ(Call("GET", "/apis/tessera.io/v1/quotas", admin_).status, 503);
  ApplyNode("n1", 4);
  Apply(R"(
apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata: {name: a100}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: team-a}
spec:
  namespaceSelector: {}
  cohort: research
  fairSharing: {weight: "3"}
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors: [{name: a100, resources: [{name: nvidia.com/gpu, nominalQuota: 1}]}]
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: team-b}
spec:
  namespaceSelector: {}
  cohort: research
  stopPolicy: Hold
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors: [{name: a100, resources: [{name: nvidia.com/gpu, nominalQuota: 3, lendingLimit: 2}]}]
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {name: a, namespace: default}
spec: {clusterQueue: team-a}
)");
  for (const char* name : {"a1", "a2", "a3", "a4"}) {
    Apply(std::string("apiVersion: v1\nkind: Pod\nmetadata: {name: ") + name +
          ", labels: {kueue.x-k8s.io/queue-name: a}}\nspec:\n  containers:\n  - name: c\n"
          "    resources: {limits: {nvidia.com/gpu: 1}}\n");
  }
  Cycle();
  const json report = Get("/apis/tessera.io/v1/quotas");
  auto node = [&](const std::string& name) {
    for (const json& i : report["items"]) {
      if (i["name"] == name) return i;
    }
    ADD_FAILURE() << name << " not in " << report.dump(2);
    return json::object();
  };
  // team-a holds its own GPU and the two team-b lends (lendingLimit 2); the fourth waits.
  const json a = node("team-a");
  ASSERT_EQ(a["resources"].size(), 1u) << a.dump();
  const json& fa = a["resources"][0];
  EXPECT_EQ(fa["flavor"], "a100");
  EXPECT_EQ(fa["resource"], "nvidia.com/gpu");
  EXPECT_EQ(fa["nominal"], 1000);  // thousandths of a GPU
  EXPECT_EQ(fa["used"], 3000);
  EXPECT_EQ(fa["borrowed"], 2000);
  EXPECT_EQ(fa["lent"], 0);
  EXPECT_EQ(a["waiting"], 1);
  EXPECT_EQ(a["cohort"], "research");
  EXPECT_EQ(a["weight"], 3.0);
  EXPECT_GT(a["share"].get<double>(), 0.0);
  EXPECT_EQ(a["stopPolicy"], "None");
  const json b = node("team-b");
  const json& fb = b["resources"][0];
  EXPECT_EQ(fb["used"], 0);
  EXPECT_EQ(fb["lent"], 2000);
  EXPECT_EQ(fb["lendingLimit"], 2000);
  EXPECT_TRUE(fb["borrowingLimit"].is_null());
  EXPECT_EQ(b["stopPolicy"], "Hold");
  // The cohort's quota is what its queues lend it (1 + 2); weights 3 and 1 share it 3:1.
  EXPECT_EQ(node("research")["kind"], "Cohort");
  EXPECT_EQ(fa["deserved"], 2250);
  EXPECT_EQ(fb["deserved"], 750);
  // Queues are the admin's.
  EXPECT_EQ(Call("GET", "/apis/tessera.io/v1/quotas", NamespaceToken("default")).status, 403);
}

}  // namespace
}  // namespace tessera::server
