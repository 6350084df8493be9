// The eviction API (policy/v1 Eviction), as kubectl drain uses it: finished work never runs
// again, running work goes back to its queue whole with new pods.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "loop_fixture.h"

namespace tessera::server {
namespace {

using nlohmann::json;

class EvictionTest : public LoopTest {
 protected:
  HttpResponse Evict(const std::string& pod, const json& body, const std::string& ns = "default") {
    HttpRequest r;
    r.method = "POST";
    r.path = "/api/v1/namespaces/" + ns + "/pods/" + pod + "/eviction";
    r.authorization = "Bearer " + admin_;
    r.content_type = "application/json";
    r.body = body.dump();
    return api_->Handle(r);
  }
  static json Eviction(const std::string& pod) {
    return {{"apiVersion", "policy/v1"},
            {"kind", "Eviction"},
            {"metadata", {{"name", pod}, {"namespace", "default"}}}};
  }
  // The pods on `node`, as kubectl drain lists them.
  json PodsOn(const std::string& node) {
    return Get("/api/v1/pods?fieldSelector=spec.nodeName%3D" + node)["items"];
  }
  HttpResponse GetPod(const std::string& name) {
    HttpRequest r;
    r.method = "GET";
    r.path = "/api/v1/namespaces/default/pods/" + name;
    r.authorization = "Bearer " + admin_;
    return api_->Handle(r);
  }
  void Cordon(const std::string& node, bool on = true) {
    json n = Get("/apis/tessera.io/v1/nodes/" + node);
    n["spec"]["unschedulable"] = on;
    HttpRequest r;
    r.method = "PUT";
    r.path = "/apis/tessera.io/v1/nodes/" + node;
    r.authorization = "Bearer " + admin_;
    r.content_type = "application/json";
    r.body = n.dump();
    ASSERT_EQ(api_->Handle(r).status, 200);
  }
};

// The issue's case: `drain` re-queued a Succeeded Job, which ran again after uncordon. Now its
// pod is removed and the Job stays Succeeded, through any number of cycles.
TEST_F(EvictionTest, AFinishedJobsPodIsRemovedAndTheJobNeverRunsAgain) {
  ApplyNode("n1", 2);
  Apply(R"(
apiVersion: batch/v1
kind: Job
metadata: {name: done}
spec:
  template:
    spec:
      restartPolicy: Never
      containers: [{name: c, command: ["true"], resources: {limits: {nvidia.com/gpu: 1}}}]
)");
  Cycle();
  json job = Job("done");
  ASSERT_EQ(job["status"]["phase"], "Admitted") << job.dump();
  // Its agent reports the pod's end and the Job's (agent/worker.cc).
  job["status"]["pods"][0]["state"] = {{"phase", "Succeeded"}, {"exitCode", 0}};
  job["status"]["phase"] = "Succeeded";
  job["status"]["finishedAt"] = "2027-01-15T08:00:02.000Z";
  Put(job);
  Cycle();
  job = Job("done");
  ASSERT_EQ(job["status"]["phase"], "Succeeded") << job.dump();
  const std::string admitted_at = job["status"]["admittedAt"];

  Cordon("n1");
  const json pods = PodsOn("n1");
  ASSERT_EQ(pods.size(), 1u) << pods.dump();
  const std::string pod = pods[0]["metadata"]["name"];
  const HttpResponse r = Evict(pod, Eviction(pod));
  ASSERT_EQ(r.status, 201) << r.body;
  EXPECT_NE(r.body.find("does not run again"), std::string::npos) << r.body;
  EXPECT_EQ(GetPod(pod).status, 404);
  EXPECT_TRUE(PodsOn("n1").empty());
  // Uncordoned, and cycle after cycle: still Succeeded, never admitted again.
  Cordon("n1", false);
  for (int i = 0; i < 3; ++i) Cycle();
  job = Job("done");
  EXPECT_EQ(job["status"]["phase"], "Succeeded") << job.dump();
  EXPECT_EQ(job["status"]["admittedAt"], admitted_at);
  EXPECT_EQ(Get("/apis/batch/v1/namespaces/default/jobs/done")["status"]["succeeded"], 1);
  // Evicting it again finds no pod.
  EXPECT_EQ(Evict(pod, Eviction(pod)).status, 404);
}

// A running gang: evicting one of its pods sends the Job back to its queue whole; its pods get
// new uids (kubectl drain waits for that), and it is placed again where there is room.
TEST_F(EvictionTest, ARunningGangGoesBackToItsQueueWholeWithNewPods) {
  ApplyNode("n1", 2);
  Apply(R"(
apiVersion: tessera.io/v1
kind: Job
metadata: {name: gang, namespace: default}
spec:
  tasks:
  - name: w
    replicas: 2
    command: ["true"]
    resources: {limits: {nvidia.com/gpu: 1}}
)");
  Cycle();
  ASSERT_EQ(Job("gang")["status"]["phase"], "Admitted");
  ApplyNode("n2", 2);
  Cordon("n1");
  const json pods = PodsOn("n1");
  ASSERT_EQ(pods.size(), 2u) << pods.dump();
  const std::string pod = pods[0]["metadata"]["name"];
  const std::string uid = pods[0]["metadata"]["uid"];

  // Dry run first: nothing changes.
  json dry = Eviction(pod);
  dry["deleteOptions"] = {{"dryRun", {"All"}}};
  ASSERT_EQ(Evict(pod, dry).status, 201);
  EXPECT_EQ(Job("gang")["status"]["phase"], "Admitted");

  const HttpResponse r = Evict(pod, Eviction(pod));
  ASSERT_EQ(r.status, 201) << r.body;
  json job = Job("gang");
  EXPECT_EQ(job["status"]["phase"], "Pending") << job.dump();
  EXPECT_NE(job["status"]["message"].get<std::string>().find("goes back to its queue whole"),
            std::string::npos);
  EXPECT_EQ(job["status"]["conditions"][0]["type"], "Evicted");
  EXPECT_TRUE(PodsOn("n1").empty());
  HttpResponse now = GetPod(pod);
  ASSERT_EQ(now.status, 200);
  EXPECT_NE(json::parse(now.body)["metadata"]["uid"], uid);
  // The other pod of the gang is not placed any more: nothing to evict.
  const std::string other = pods[1]["metadata"]["name"];
  const HttpResponse o = Evict(other, Eviction(other));
  EXPECT_EQ(o.status, 201);
  EXPECT_NE(o.body.find("not placed"), std::string::npos) << o.body;

  Cycle();
  job = Job("gang");
  ASSERT_EQ(job["status"]["phase"], "Admitted") << job.dump();
  for (const json& p : job["status"]["pods"]) EXPECT_EQ(p["node"], "n2");
  EXPECT_EQ(PodsOn("n2").size(), 2u);
}

TEST_F(EvictionTest, BadEvictionsAreRefusedNamingWhy) {
  ApplyNode("n1", 1);
  EXPECT_EQ(Evict("nope-main-0", Eviction("nope-main-0")).status, 404);
  Apply(R"(
apiVersion: tessera.io/v1
kind: Job
metadata: {name: one, namespace: default}
spec:
  tasks: [{name: main, command: ["true"]}]
)");
  HttpResponse r = Evict("one-main-0", Eviction("other"));
  EXPECT_EQ(r.status, 400);
  EXPECT_NE(r.body.find("name in URL does not match name in Eviction object"), std::string::npos);
  r = Evict("one-main-0", {{"apiVersion", "v1"}, {"kind", "Pod"}});
  EXPECT_EQ(r.status, 400);
  HttpRequest get;
  get.method = "GET";
  get.path = "/api/v1/namespaces/default/pods/one-main-0/eviction";
  get.authorization = "Bearer " + admin_;
  EXPECT_EQ(api_->Handle(get).status, 405);
}

// kubectl drain evicts only where discovery lists pods/eviction with its group and version.
TEST_F(EvictionTest, DiscoveryListsTheEvictionSubresource) {
  const json core = Get("/api/v1");
  bool listed = false;
  for (const json& r : core["resources"]) {
    if (r["name"] == "pods/eviction") {
      listed = r["kind"] == "Eviction" && r["group"] == "policy" && r["version"] == "v1";
    }
  }
  EXPECT_TRUE(listed) << core.dump();
}

}  // namespace
}  // namespace tessera::server
