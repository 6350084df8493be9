// Writes through a core/v1 Pod's view of its Job, as kubectl sends them.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "loop_fixture.h"

namespace tessera::server {
namespace {

using nlohmann::json;

// The issue's case: kubectl label (and annotate, and any metadata patch) of a running Pod failed
// with "spec.tasks[0].nodeSelector: field is immutable while the job has pods placed": the
// view's spec.nodeName, the scheduler's, came back as a node selector. It is the scheduler's say.
TEST_F(LoopTest, ARunningPodIsLabelledAndAnnotatedWhereItRuns) {
  ApplyNode("n1", 2);
  Apply(R"(
apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  containers: [{name: c, command: ["sleep", "100"], resources: {limits: {nvidia.com/gpu: 1}}}]
)");
  Cycle();
  ASSERT_EQ(Job("p")["status"]["phase"], "Admitted");
  auto patch = [&](const std::string& type, const json& body) {
    HttpRequest r;
    r.method = "PATCH";
    r.path = "/api/v1/namespaces/default/pods/p";
    r.authorization = "Bearer " + admin_;
    r.content_type = type;
    r.body = body.dump();
    return api_->Handle(r);
  };
  HttpResponse out =
      patch("application/merge-patch+json", {{"metadata", {{"labels", {{"a", "b"}}}}}});
  ASSERT_EQ(out.status, 200) << out.body;
  out = patch("application/strategic-merge-patch+json",
              {{"metadata", {{"annotations", {{"note", "kept"}}}}}});
  ASSERT_EQ(out.status, 200) << out.body;
  const json pod = Get("/api/v1/namespaces/default/pods/p");
  EXPECT_EQ(pod["metadata"]["labels"]["a"], "b") << pod.dump();
  EXPECT_EQ(pod["metadata"]["annotations"]["note"], "kept") << pod.dump();
  EXPECT_EQ(pod["spec"]["nodeName"], "n1");
  // Still running where it was: the write changed no placement.
  Cycle();
  const json job = Job("p");
  EXPECT_EQ(job["status"]["phase"], "Admitted");
  EXPECT_EQ(job["status"]["pods"][0]["node"], "n1");
  EXPECT_FALSE(job["spec"]["tasks"][0].contains("nodeSelector")) << job.dump();
  // Moving it is still a change of its template, refused while it runs.
  out = patch("application/merge-patch+json", {{"spec", {{"nodeName", "n2"}}}});
  EXPECT_EQ(out.status, 400) << out.body;
  EXPECT_NE(out.body.find("immutable"), std::string::npos) << out.body;
}

// A queued batch/v1 Job that waits for its quota reads Suspended and has no pods, as Kueue keeps
// it suspended and Kubernetes' Job controller makes no pods for it (the issue's case: it read
// Running, with a Pending pod); admitted, it runs and its pod appears.
TEST_F(LoopTest, AQueuedJobWaitingForQuotaIsSuspendedWithNoPods) {
  ApplyNode("n1", 2);
  ApplyKueueQueue(1);
  Apply(R"(
apiVersion: batch/v1
kind: Job
metadata: {name: big, labels: {kueue.x-k8s.io/queue-name: main}}
spec:
  template:
    spec:
      restartPolicy: Never
      containers: [{name: c, command: ["true"], resources: {limits: {nvidia.com/gpu: 2}}}]
)");
  Cycle();
  ASSERT_EQ(Job("big")["status"]["phase"], "Pending");
  json view = Get("/apis/batch/v1/namespaces/default/jobs/big");
  EXPECT_EQ(view["spec"]["suspend"], true) << view.dump();
  ASSERT_FALSE(view["status"]["conditions"].empty()) << view.dump();
  EXPECT_EQ(view["status"]["conditions"][0]["type"], "Suspended");
  EXPECT_EQ(view["status"]["active"], 0);
  EXPECT_TRUE(Get("/api/v1/namespaces/default/pods?labelSelector=job-name%3Dbig")["items"].empty());
  ApplyKueueQueue(2);
  Cycle();
  ASSERT_EQ(Job("big")["status"]["phase"], "Admitted");
  view = Get("/apis/batch/v1/namespaces/default/jobs/big");
  EXPECT_EQ(view["spec"]["suspend"], false) << view.dump();
  EXPECT_EQ(Get("/api/v1/namespaces/default/pods?labelSelector=job-name%3Dbig")["items"].size(),
            1u);
}

}  // namespace
}  // namespace tessera::server
