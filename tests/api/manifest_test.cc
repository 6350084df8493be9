#include "api/manifest.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "api/kinds.h"
#include "api/object.h"

namespace tessera::api {
namespace {

using nlohmann::json;

std::string Seed(const std::string& file) {
  std::ifstream in(std::string(TESSERA_TEST_DATA_DIR) + "/seeds/" + file);
  std::stringstream ss;
  ss << in.rdbuf();
  EXPECT_FALSE(ss.str().empty()) << file;
  return ss.str();
}

// Translates a seed file; every object must also pass the API's own validation.
std::vector<json> Translate(const std::string& file) {
  auto objs = TranslateManifest(Seed(file), file, "default");
  EXPECT_TRUE(objs.ok()) << objs.status().message();
  if (!objs.ok()) return {};
  for (const json& o : *objs) {
    EXPECT_TRUE(ValidateEnvelope(o).ok()) << ValidateEnvelope(o).message() << "\n" << o.dump();
    EXPECT_TRUE(ValidateSpec(o).ok()) << ValidateSpec(o).message() << "\n" << o.dump();
  }
  return *objs;
}

core::Workload JobOf(const json& o) {
  auto j = DecodeJob(o);
  EXPECT_TRUE(j.ok()) << j.status().message();
  return j.ok() ? j->workload : core::Workload{};
}

TEST(Manifest, PodWithTwoWholeGpus) {
  auto objs = Translate("01-pod-gpu-training.yaml");
  ASSERT_EQ(objs.size(), 1u);
  EXPECT_EQ(objs[0]["kind"], "Job");
  EXPECT_EQ(objs[0]["metadata"]["namespace"], "default");
  auto job = DecodeJob(objs[0]);
  ASSERT_TRUE(job.ok());
  const core::PodSpec& pod = job->workload.pod_sets[0].pod;
  EXPECT_EQ(job->workload.pod_sets[0].count, 1);
  EXPECT_EQ(pod.gpu.kind, core::GpuRequestKind::kWhole);
  EXPECT_EQ(pod.gpu.count, 2);
  EXPECT_EQ(pod.node_selector.at("accelerator"), "nvidia-tesla-v100");
  ASSERT_EQ(pod.tolerations.size(), 1u);
  EXPECT_EQ(pod.tolerations[0].op, core::TolerationOp::kExists);
  EXPECT_EQ(job->tasks[0].name, "trainer");
  EXPECT_EQ(job->tasks[0].restart_policy, "Always");
  EXPECT_EQ(job->tasks[0].env.at("NVIDIA_DRIVER_CAPABILITIES"), "compute,utility");
}

TEST(Manifest, TimeSlicingConfigMapCoversEveryNode) {
  auto objs = Translate("02-time-slicing-config.yaml");
  ASSERT_EQ(objs.size(), 1u);
  auto cfg = DecodeGpuSharingConfig(objs[0]);
  ASSERT_TRUE(cfg.ok()) << cfg.status().message();
  EXPECT_TRUE(cfg->is_default);
  EXPECT_EQ(cfg->sharing.mode, core::SharingMode::kTimeSlice);
  EXPECT_EQ(cfg->sharing.replicas, 4);
  EXPECT_FALSE(cfg->sharing.rename);
}

TEST(Manifest, CgpuSharesByMemoryAndCompute) {
  auto objs = Translate("03-cgpu-pods.yaml");
  ASSERT_EQ(objs.size(), 2u);
  const core::PodSpec mem = JobOf(objs[0]).pod_sets[0].pod;
  EXPECT_EQ(mem.gpu.kind, core::GpuRequestKind::kShare);
  EXPECT_EQ(mem.gpu.memory_mib, 4096);
  const core::PodSpec both = JobOf(objs[1]).pod_sets[0].pod;
  EXPECT_EQ(both.gpu.memory_mib, 8192);
  EXPECT_EQ(both.gpu.milli, 500);
}

TEST(Manifest, TopologyPodKeepsCpuMemoryAndSelector) {
  auto objs = Translate("04-topology-aware-pod.yaml");
  ASSERT_EQ(objs.size(), 1u);
  const core::PodSpec pod = JobOf(objs[0]).pod_sets[0].pod;
  EXPECT_EQ(pod.gpu.count, 2);
  EXPECT_EQ(pod.requests.cpu_milli, 8000);
  EXPECT_EQ(pod.requests.memory_mib, 32 * 1024);
  EXPECT_EQ(pod.node_selector.at("nvidia.com/gpu.count"), "8");
}

TEST(Manifest, VolcanoGangIsOneJobOfFourPodsOfEightGpus) {
  auto objs = Translate("05-volcano-gang.yaml");
  ASSERT_EQ(objs.size(), 2u);
  auto pg = DecodePodGroup(objs[0]);
  ASSERT_TRUE(pg.ok()) << pg.status().message();
  EXPECT_EQ(pg->min_member, 4);
  // Volcano's default queue always exists: work without a queue, recorded as such.
  EXPECT_EQ(pg->queue, "");
  EXPECT_EQ(objs[0]["metadata"]["annotations"]["tessera.io/volcano-queue"], "default");
  EXPECT_EQ(pg->min_resources.gpu.count, 32);
  auto job = DecodeJob(objs[1]);
  ASSERT_TRUE(job.ok()) << job.status().message();
  ASSERT_EQ(job->workload.pod_sets.size(), 1u);
  EXPECT_EQ(job->workload.pod_sets[0].count, 4);
  EXPECT_EQ(job->workload.pod_sets[0].pod.gpu.count, 8);
  EXPECT_EQ(job->workload.min_member, 4);
  EXPECT_EQ(job->tasks[0].restart_policy, "OnFailure");
  EXPECT_EQ(job->tasks[0].command.front(), "python");
  EXPECT_NE(objs[1]["metadata"]["annotations"]["tessera.io/volcano-plugins"], nullptr);
}

TEST(Manifest, KueueClusterQueueAndQueuedJob) {
  auto objs = Translate("06-kueue-queue-and-job.yaml");
  ASSERT_EQ(objs.size(), 2u);
  auto q = DecodeQueue(objs[0]);
  ASSERT_TRUE(q.ok()) << q.status().message();
  EXPECT_EQ(q->name, "gpu-cluster-queue");
  ASSERT_EQ(q->resource_groups.size(), 1u);
  EXPECT_EQ(q->resource_groups[0].flavors[0].flavor, "gpu-h100");
  EXPECT_EQ(q->resource_groups[0].flavors[0].resources[0].nominal, 64 * 1000);
  auto job = DecodeJob(objs[1]);
  ASSERT_TRUE(job.ok());
  EXPECT_EQ(job->workload.local_queue, "gpu-queue");
  EXPECT_TRUE(job->suspend);
  EXPECT_EQ(job->workload.pod_sets[0].pod.gpu.count, 8);
}

TEST(Manifest, KueueV1beta2CohortNameAndParentName) {
  auto objs = TranslateManifest(R"(
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: team-a}
spec:
  cohortName: research
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors: [{name: h100, resources: [{name: nvidia.com/gpu, nominalQuota: 8}]}]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: Cohort
metadata: {name: research}
spec: {parentName: org}
)",
                                "inline", "default");
  ASSERT_TRUE(objs.ok()) << objs.status().message();
  auto q = DecodeQueue((*objs)[0]);
  ASSERT_TRUE(q.ok()) << q.status().message();
  EXPECT_EQ(q->cohort, "research");
  EXPECT_EQ((*objs)[1]["spec"]["parent"], "org");
  auto both = TranslateManifest(R"(
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata: {name: team-a}
spec: {cohort: a, cohortName: b}
)",
                                "inline", "default");
  ASSERT_FALSE(both.ok());
  EXPECT_NE(both.status().message().find("spec.cohortName"), std::string::npos)
      << both.status().message();
}

TEST(Manifest, ResourceQuotaCapsTeamAAtSixteenGpus) {
  auto objs = Translate("07-resource-quota.yaml");
  ASSERT_EQ(objs.size(), 1u);
  auto nq = DecodeNamespaceQuota(objs[0]);
  ASSERT_TRUE(nq.ok()) << nq.status().message();
  EXPECT_EQ(nq->namespace_name, "team-a");
  EXPECT_EQ(nq->hard[0], 16 * 1000);
  EXPECT_FALSE(nq->hard[1].has_value());
}

TEST(Manifest, MigSlicePod) {
  auto objs = Translate("08-mig-pod.yaml");
  ASSERT_EQ(objs.size(), 1u);
  const core::PodSpec pod = JobOf(objs[0]).pod_sets[0].pod;
  EXPECT_EQ(pod.gpu.kind, core::GpuRequestKind::kMig);
  EXPECT_EQ(pod.gpu.mig_profile, "1g.5gb");
  EXPECT_EQ(pod.node_selector.at("gpu-type"), "mig");
}

TEST(Manifest, PerNodeDevicePluginConfigs) {
  auto objs = Translate("09-per-node-sharing-config.yaml");
  ASSERT_EQ(objs.size(), 2u);
  auto def = DecodeGpuSharingConfig(objs[0]);
  auto nodex = DecodeGpuSharingConfig(objs[1]);
  ASSERT_TRUE(def.ok() && nodex.ok());
  EXPECT_EQ(def->name, "gpu-configs-default-config");
  EXPECT_TRUE(def->is_default);
  EXPECT_EQ(def->sharing.replicas, 15);
  EXPECT_FALSE(nodex->is_default);
  EXPECT_EQ(nodex->node_selector.at("nvidia.com/device-plugin.config"), "nodex-config");
  EXPECT_EQ(nodex->sharing.mode, core::SharingMode::kExclusive);
}

TEST(Manifest, PrometheusRulesAreRejectedWithWhatToDoInstead) {
  auto objs = TranslateManifest(Seed("10-prometheus-gpu-alerts.yaml"), "10.yaml", "default");
  ASSERT_FALSE(objs.ok());
  EXPECT_NE(objs.status().message().find("load them into Prometheus"), std::string::npos)
      << objs.status().message();
}

TEST(Manifest, PriorityClasses) {
  auto objs = Translate("11-priority-classes.yaml");
  ASSERT_EQ(objs.size(), 3u);
  auto online = DecodePriorityClass(objs[0]);
  auto demo = DecodePriorityClass(objs[2]);
  ASSERT_TRUE(online.ok() && demo.ok());
  EXPECT_EQ(online->value, 100000);
  EXPECT_EQ(demo->value, 10);
  EXPECT_EQ(demo->preemption, core::PreemptionPolicyKind::kNever);
}

TEST(Manifest, WhatIsNotActedOnIsAnErrorNamingTheField) {
  struct Case {
    std::string yaml;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {name: nvidia-device-plugin}\n",
       "replaced by `tessera agent`"},
      {"apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  volumes: []\n  containers: "
       "[{name: c}]\n",
       "document 1 (Pod p): spec.volumes: not supported"},
      {"apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - name: c\n    "
       "env: [{name: A, valueFrom: {x: 1}}]\n",
       "spec.containers[0].env[0].valueFrom"},
      {"apiVersion: batch/v1\nkind: Job\nmetadata: {name: j}\nspec:\n  parallelism: 2\n  "
       "completions: 4\n  template: {spec: {containers: [{name: c}]}}\n",
       "spec.completions: must equal parallelism"},
      {"apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers: [\n", "YAML:"},
      {"a: &a [1,1,1,1,1,1,1,1,1,1]\nb: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a,*a]\nc: &c "
       "[*b,*b,*b,*b,*b,*b,*b,*b,*b,*b]\nd: &d [*c,*c,*c,*c,*c,*c,*c,*c,*c,*c]\ne: &e "
       "[*d,*d,*d,*d,*d,*d,*d,*d,*d,*d]\nf: &f [*e,*e,*e,*e,*e,*e,*e,*e,*e,*e]\ng: "
       "[*f,*f,*f,*f,*f,*f,*f,*f,*f,*f]\n",
       "more than 1000000 nodes"},
      {"kind: Pod\nmetadata: {name: p}\n", "apiVersion: must be set"},
  };
  for (const Case& c : cases) {
    auto r = TranslateManifest(c.yaml, "in.yaml", "default");
    ASSERT_FALSE(r.ok()) << c.yaml;
    EXPECT_NE(r.status().message().find(c.message), std::string::npos) << r.status().message();
  }
  std::string deep = "a: ";
  for (int i = 0; i < 100; ++i) deep += "[";
  for (int i = 0; i < 100; ++i) deep += "]";
  EXPECT_FALSE(TranslateManifest(deep, "deep.yaml", "default").ok());
}

TEST(Manifest, QuotedScalarsStayStrings) {
  auto docs = ParseYamlDocuments("a: \"true\"\nb: true\nc: '8'\nd: 8\ne: 0.5\nf: ~\ng: v1\n");
  ASSERT_TRUE(docs.ok());
  const json& d = (*docs)[0];
  EXPECT_EQ(d["a"], "true");
  EXPECT_EQ(d["b"], true);
  EXPECT_EQ(d["c"], "8");
  EXPECT_EQ(d["d"], 8);
  EXPECT_EQ(d["e"], 0.5);
  EXPECT_TRUE(d["f"].is_null());
  EXPECT_EQ(d["g"], "v1");
}

}  // namespace
}  // namespace tessera::api

namespace tessera::api {
namespace {

TEST(Manifest, SecurityContextUserAndGroupRunTheTaskTheContainersOverride) {
  auto objs = TranslateManifest(R"(apiVersion: v1
kind: Pod
metadata: {name: p}
spec:
  securityContext: {runAsUser: 1000, runAsGroup: 1000}
  containers:
  - name: c
    command: ["id"]
    securityContext: {runAsUser: 1001}
)",
                                "in.yaml", "default");
  ASSERT_TRUE(objs.ok()) << objs.status().message();
  const json& task = (*objs)[0]["spec"]["tasks"][0];
  EXPECT_EQ(task["runAsUser"], 1001);
  EXPECT_EQ(task["runAsGroup"], 1000);
  auto job = DecodeJob((*objs)[0]);
  ASSERT_TRUE(job.ok()) << job.status().message();
  EXPECT_EQ(job->tasks[0].run_as_user, 1001);
  EXPECT_EQ(job->tasks[0].run_as_group, 1000);

  for (const auto& [context, field] : std::vector<std::pair<std::string, std::string>>{
           {"{privileged: true}", "spec.containers[0].securityContext.privileged"},
           {"{runAsUser: -1}", "spec.containers[0].securityContext.runAsUser"},
           {"{runAsUser: \"root\"}", "spec.containers[0].securityContext.runAsUser"},
           {"[]", "spec.containers[0].securityContext"}}) {
    auto bad = TranslateManifest(
        "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - name: c\n"
        "    command: [id]\n    securityContext: " +
            context + "\n",
        "in.yaml", "default");
    ASSERT_FALSE(bad.ok()) << context;
    EXPECT_NE(bad.status().message().find(field), std::string::npos) << bad.status().message();
  }
}

}  // namespace
}  // namespace tessera::api

namespace tessera::api {
namespace {

// Found by tests/fuzz: yaml-cpp 0.7's loader allocated without end on these (24 GB for a
// 327-byte body); manifests are now read on libyaml's event parser.
TEST(Manifest, InputsThatMadeTheYamlLoaderAllocateWithoutEndAreRefused) {
  for (const char* text : {"\"a\",", "[a],", "{a: 1},", "{\"m\"::\"t\"},\nx", "{a} ,", "\"\","}) {
    auto docs = ParseYamlDocuments(text);
    ASSERT_FALSE(docs.ok()) << text;
    EXPECT_NE(docs.status().message().find("line 1"), std::string::npos) << docs.status().message();
  }
  EXPECT_FALSE(ParseYamlDocuments(std::string(100'000, '[')).ok());
  // A plain scalar continued on a line that starts with a quote is one scalar (yaml-cpp read
  // the quote as a new token and looped).
  auto folded = ParseYamlDocuments("x\n\"\",");
  ASSERT_TRUE(folded.ok()) << folded.status().message();
  EXPECT_EQ((*folded)[0], "x \"\",");
  // Valid YAML, with commas in plain scalars and flow collections, still loads.
  auto ok = ParseYamlDocuments("a: b, c\nd: [1, 2]\ne: {f: g, h: i}\n");
  ASSERT_TRUE(ok.ok()) << ok.status().message();
  EXPECT_EQ((*ok)[0]["a"], "b, c");
}

}  // namespace
}  // namespace tessera::api
