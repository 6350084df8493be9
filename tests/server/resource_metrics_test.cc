// metrics.k8s.io, as kubectl top reads it: the usage agents report, per node and per running
// pod, served while it is fresh and only to those who may read the node or the pod.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "loop_fixture.h"

namespace tessera::server {
namespace {

using nlohmann::json;

class ResourceMetricsTest : public LoopTest {
 protected:
  HttpResponse Call(const std::string& method, const std::string& path, const std::string& token,
                    const json& body = json()) {
    HttpRequest r;
    r.method = method;
    r.path = path.substr(0, path.find('?'));
    if (path.find('?') != std::string::npos) {
      EXPECT_TRUE(ParseQuery(path.substr(path.find('?') + 1), &r.query)) << path;
    }
    r.authorization = "Bearer " + token;
    r.content_type = "application/json";
    if (!body.is_null()) r.body = body.dump();
    return api_->Handle(r);
  }
  std::string Mint(const json& body) {
    const HttpResponse r = Call("POST", "/apis/tessera.io/v1/tokens", admin_, body);
    EXPECT_EQ(r.status, 201) << r.body;
    return json::parse(r.body)["token"];
  }
  // A running batch/v1 Job `name` on n1, its pod reported Running by the agent.
  void RunningJob(const std::string& name) {
    Apply(R"(
apiVersion: batch/v1
kind: Job
metadata: {name: )" +
          name + R"(, labels: {team: vision}}
spec:
  template:
    spec:
      restartPolicy: Never
      containers: [{name: trainer, command: ["sleep", "60"]}]
)");
    Cycle();
    json job = Job(name);
    ASSERT_EQ(job["status"]["phase"], "Admitted") << job.dump();
    job["status"]["pods"][0]["state"] = {{"phase", "Running"}};
    Put(job);
  }
  static json Report(const std::string& pod_key) {
    return {{"cpuNanoCores", 1'500'000'000},
            {"memoryBytes", int64_t{8} << 30},
            {"windowMs", 5000},
            {"pods",
             {{{"pod", pod_key},
               {"cpuNanoCores", 250'000'000},
               {"memoryBytes", 64 << 20},
               {"windowMs", 5030}}}}};
  }
};

TEST_F(ResourceMetricsTest, AgentsReportAndKubectlTopReads) {
  ApplyNode("n1", 1);
  ApplyNode("n2", 1);
  RunningJob("train");
  const json pod = Get("/api/v1/namespaces/default/pods")["items"][0];
  const std::string pod_name = pod["metadata"]["name"];
  const std::string tessera_pod = pod_name.substr(std::string("train-").size());
  const std::string agent = Mint({{"role", "agent"}, {"node", "n1"}});

  // Nothing reported yet: no metrics, and by name a 404 as metrics-server answers.
  EXPECT_TRUE(Get("/apis/metrics.k8s.io/v1beta1/nodes")["items"].empty());
  EXPECT_EQ(Call("GET", "/apis/metrics.k8s.io/v1beta1/nodes/n1", admin_).status, 404);

  const std::string usage = "/apis/tessera.io/v1/nodes/n1/usage";
  HttpResponse r = Call("PUT", usage, agent, Report("default/train/" + tessera_pod));
  ASSERT_EQ(r.status, 200) << r.body;

  const json nodes = Get("/apis/metrics.k8s.io/v1beta1/nodes");
  EXPECT_EQ(nodes["kind"], "NodeMetricsList");
  ASSERT_EQ(nodes["items"].size(), 1u) << nodes.dump();  // n2 reported nothing
  const json& n1 = nodes["items"][0];
  EXPECT_EQ(n1["kind"], "NodeMetrics");
  EXPECT_EQ(n1["metadata"]["name"], "n1");
  EXPECT_EQ(n1["usage"]["cpu"], "1500000000n");
  EXPECT_EQ(n1["usage"]["memory"], "8388608Ki");
  EXPECT_EQ(n1["window"], "5s");
  EXPECT_EQ(Get("/apis/metrics.k8s.io/v1beta1/nodes/n1")["usage"], n1["usage"]);

  const json pods = Get("/apis/metrics.k8s.io/v1beta1/namespaces/default/pods");
  EXPECT_EQ(pods["kind"], "PodMetricsList");
  ASSERT_EQ(pods["items"].size(), 1u) << pods.dump();
  const json& pm = pods["items"][0];
  EXPECT_EQ(pm["metadata"]["name"], pod_name);
  EXPECT_EQ(pm["metadata"]["namespace"], "default");
  EXPECT_EQ(pm["window"], "5.03s");
  ASSERT_EQ(pm["containers"].size(), 1u);
  EXPECT_EQ(pm["containers"][0]["name"], "trainer");  // the container's own name
  EXPECT_EQ(pm["containers"][0]["usage"]["cpu"], "250000000n");
  EXPECT_EQ(pm["containers"][0]["usage"]["memory"], "65536Ki");
  // By name, across namespaces, and with kubectl top's selectors.
  EXPECT_EQ(Get("/apis/metrics.k8s.io/v1beta1/namespaces/default/pods/" + pod_name)["kind"],
            "PodMetrics");
  EXPECT_EQ(Get("/apis/metrics.k8s.io/v1beta1/pods")["items"].size(), 1u);
  EXPECT_EQ(Get("/apis/metrics.k8s.io/v1beta1/namespaces/default/pods?labelSelector=team%3Dvision")
                ["items"]
                    .size(),
            1u);
  EXPECT_TRUE(
      Get("/apis/metrics.k8s.io/v1beta1/namespaces/default/pods?labelSelector=team%3Dnlp")["items"]
          .empty());
  EXPECT_TRUE(Get("/apis/metrics.k8s.io/v1beta1/namespaces/other/pods")["items"].empty());
  EXPECT_EQ(Call("GET", "/apis/metrics.k8s.io/v1beta1/namespaces/default/pods/nope", admin_).status,
            404);

  // Stale: an agent that stopped reporting is not shown as current.
  now_ += UsageBook::kFreshMs + 1000;
  EXPECT_TRUE(Get("/apis/metrics.k8s.io/v1beta1/nodes")["items"].empty());
  EXPECT_TRUE(Get("/apis/metrics.k8s.io/v1beta1/namespaces/default/pods")["items"].empty());
}

TEST_F(ResourceMetricsTest, OnlyTheNodesAgentReportsAndTenantsSeeTheirNamespace) {
  ApplyNode("n1", 1);
  RunningJob("train");
  const std::string n1 = Mint({{"role", "agent"}, {"node", "n1"}});
  const std::string n2 = Mint({{"role", "agent"}, {"node", "n2"}});
  const std::string tenant = Mint({{"namespace", "default"}});
  const std::string other = Mint({{"namespace", "team-b"}});
  const std::string usage = "/apis/tessera.io/v1/nodes/n1/usage";
  const json report = Report("default/train/main-0");

  EXPECT_EQ(Call("PUT", usage, n2, report).status, 403);      // another node's agent
  EXPECT_EQ(Call("PUT", usage, tenant, report).status, 403);  // not an agent
  EXPECT_EQ(Call("GET", usage, n1).status, 405);
  // Bad reports name the field and change nothing.
  json bad = report;
  bad["pods"][0]["memoryBytes"] = -1;
  HttpResponse r = Call("PUT", usage, n1, bad);
  EXPECT_EQ(r.status, 400);
  EXPECT_NE(r.body.find("pods[0].memoryBytes"), std::string::npos) << r.body;
  bad = report;
  bad["windowMs"] = 0;
  EXPECT_EQ(Call("PUT", usage, n1, bad).status, 400);
  bad = report;
  bad["pods"][0]["pod"] = "no-slashes";
  EXPECT_EQ(Call("PUT", usage, n1, bad).status, 400);
  EXPECT_EQ(Call("PUT", usage, n1, json("text")).status, 400);
  EXPECT_TRUE(Get("/apis/metrics.k8s.io/v1beta1/nodes")["items"].empty());

  ASSERT_EQ(Call("PUT", usage, n1, report).status, 200);
  // A tenant reads its own namespace's pods, not nodes or other namespaces.
  EXPECT_EQ(Call("GET", "/apis/metrics.k8s.io/v1beta1/namespaces/default/pods", tenant).status,
            200);
  EXPECT_EQ(Call("GET", "/apis/metrics.k8s.io/v1beta1/namespaces/default/pods", other).status, 403);
  EXPECT_EQ(Call("GET", "/apis/metrics.k8s.io/v1beta1/pods", tenant).status, 403);
  EXPECT_EQ(Call("GET", "/apis/metrics.k8s.io/v1beta1/nodes", tenant).status, 403);
  EXPECT_EQ(Call("POST", "/apis/metrics.k8s.io/v1beta1/nodes", admin_).status, 405);
}

}  // namespace
}  // namespace tessera::server
