
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "api/discovery.h"
#include "api/kube_kinds.h"
#include "api/kube_node.h"
#include "api/kube_table.h"
#include "api/manifest.h"
#include "api/time.h"

namespace tessera::api {
namespace {

using nlohmann::json;

// Kubernetes' own cases: k8s.io/apimachinery/pkg/util/duration/duration_test.go,
// TestHumanDuration.
TEST(Kube, HumanDurationAsKubernetesWritesIt) {
  constexpr int64_t kS = 1000, kM = 60 * kS, kH = 60 * kM;
  const std::pair<int64_t, const char*> cases[] = {
      {1 * kS, "1s"},
      {70 * kS, "70s"},
      {190 * kS, "3m10s"},
      {70 * kM, "70m"},
      {47 * kH, "47h"},
      {49 * kH, "2d1h"},
      {(8 * 24 + 2) * kH, "8d"},
      {(367 * 24) * kH, "367d"},
      {(365 * 2 * 24 + 25) * kH, "2y1d"},
      {(365 * 8 * 24 + 2) * kH, "8y"},
  };
  for (const auto& [ms, want] : cases) EXPECT_EQ(HumanDuration(ms), want) << ms;
  EXPECT_EQ(HumanDuration(-5 * kS), "<invalid>");
  EXPECT_EQ(HumanDuration(-500), "0s");
}

json TesseraNode(const std::string& heartbeat, bool unschedulable) {
  json gpus = json::array();
  for (int i = 0; i < 4; ++i) {
    gpus.push_back({{"index", i},
                    {"uuid", "GPU-" + std::to_string(i)},
                    {"model", "A100-80GB"},
                    {"memoryMiB", 81920},
                    {"health", i == 3 ? "Unhealthy" : "Healthy"}});
  }
  return {{"apiVersion", "tessera.io/v1"},
          {"kind", "Node"},
          {"metadata",
           {{"name", "gpu-a"},
            {"resourceVersion", "7"},
            {"creationTimestamp", "2026-11-23T10:00:00.000Z"},
            {"labels", {{"node-role.kubernetes.io/worker", ""}}}}},
          {"spec",
           {{"unschedulable", unschedulable},
            {"taints", {{{"key", "gpu"}, {"value", "a100"}, {"effect", "NoSchedule"}}}}}},
          {"status",
           {{"allocatable", {{"cpu", "64"}, {"memory", "512Gi"}}},
            {"gpus", gpus},
            {"driverVersion", "550.54.15"},
            {"heartbeat", heartbeat}}}};
}

TEST(Kube, NodeViewOffersTheResourcesOfEachCardsSharing) {
  // GPU 0 in seven MIG instances, GPU 1 time-sliced four ways (renamed), GPU 2 shared by
  // fraction, GPU 3 whole but unhealthy.
  const auto config = [](const char* name, const char* gpu, core::SharingMode mode) {
    GpuSharingConfigSpec c;
    c.name = name;
    c.gpus = {gpu};
    c.sharing.mode = mode;
    return c;
  };
  GpuSharingConfigSpec mig = config("a-mig", "0", core::SharingMode::kMig);
  mig.mig_layout = {{"1g.10gb", 7}};
  GpuSharingConfigSpec slices = config("b-slices", "1", core::SharingMode::kTimeSlice);
  slices.sharing.replicas = 4;
  slices.sharing.rename = true;
  const GpuSharingConfigSpec shared = config("c-shared", "GPU-2", core::SharingMode::kShared);
  const int64_t now = ParseTime("2026-11-23T12:00:00.000Z");
  const json n =
      KubeNode(TesseraNode("2026-11-23T11:59:55.000Z", false), now, 40'000, {mig, slices, shared});
  EXPECT_EQ(n["status"]["capacity"], json::parse(R"({"cpu": "64", "memory": "512Gi",
      "pods": "110", "nvidia.com/gpu": "1", "nvidia.com/mig-1g.10gb": "7",
      "nvidia.com/gpu.shared": "4", "tessera.io/gpu-milli": "1000", "aliyun.com/gpu-mem": "80",
      "aliyun.com/gpu-count": "1", "aliyun.com/gpu-core": "100", "nvidia.com/gpumem": "81920",
      "nvidia.com/gpucores": "100"})"));
  // The unhealthy whole card is not allocatable.
  EXPECT_EQ(n["status"]["allocatable"]["nvidia.com/gpu"], "0");
  EXPECT_EQ(n["status"]["allocatable"]["nvidia.com/mig-1g.10gb"], "7");
  // A layout the card cannot take leaves it whole, as the scheduler does.
  GpuSharingConfigSpec wrong = mig;
  wrong.mig_layout = {{"7g.80gb", 2}};
  const json w = KubeNode(TesseraNode("2026-11-23T11:59:55.000Z", false), now, 40'000, {wrong});
  EXPECT_EQ(w["status"]["capacity"]["nvidia.com/gpu"], "4");
  EXPECT_FALSE(w["status"]["capacity"].contains("nvidia.com/mig-7g.80gb"));
}

TEST(Kube, NodeViewCarriesGpusReadinessAndCordon) {
  const int64_t now = ParseTime("2026-11-23T12:00:00.000Z");
  const json n = KubeNode(TesseraNode("2026-11-23T11:59:55.000Z", false), now, 40'000, {});
  EXPECT_EQ(n["apiVersion"], "v1");
  EXPECT_EQ(n["kind"], "Node");
  EXPECT_EQ(n["metadata"]["resourceVersion"], "7");
  EXPECT_EQ(n["metadata"]["labels"]["kubernetes.io/hostname"], "gpu-a");
  EXPECT_EQ(n["status"]["capacity"]["nvidia.com/gpu"], "4");
  EXPECT_EQ(n["status"]["allocatable"]["nvidia.com/gpu"], "3");  // one card unhealthy
  EXPECT_EQ(n["status"]["allocatable"]["cpu"], "64");
  EXPECT_EQ(n["spec"]["taints"][0]["key"], "gpu");
  EXPECT_FALSE(n["spec"].contains("unschedulable"));
  EXPECT_EQ(n["status"]["conditions"][0]["type"], "Ready");
  EXPECT_EQ(n["status"]["conditions"][0]["status"], "True");
  EXPECT_EQ(n["metadata"]["annotations"]["tessera.io/driver-version"], "550.54.15");

  // A stale heartbeat: Unknown, as the node lifecycle controller says; cordoned.
  const json stale = KubeNode(TesseraNode("2026-11-23T11:58:00.000Z", true), now, 40'000, {});
  EXPECT_EQ(stale["status"]["conditions"][0]["status"], "Unknown");
  EXPECT_EQ(stale["status"]["conditions"][0]["reason"], "NodeStatusUnknown");
  EXPECT_EQ(stale["spec"]["unschedulable"], true);

  const json table = NodeTable({n, stale}, "9", now);
  EXPECT_EQ(table["kind"], "Table");
  EXPECT_EQ(table["apiVersion"], "meta.k8s.io/v1");
  ASSERT_EQ(table["rows"].size(), 2u);
  const json& cells = table["rows"][0]["cells"];
  EXPECT_EQ(cells[0], "gpu-a");
  EXPECT_EQ(cells[1], "Ready");
  EXPECT_EQ(cells[2], "worker");
  EXPECT_EQ(cells[3], "120m");  // created two hours before now
  EXPECT_EQ(cells[5], "3/4");
  EXPECT_EQ(table["rows"][1]["cells"][1], "Unknown,SchedulingDisabled");
  EXPECT_EQ(table["rows"][0]["object"]["kind"], "Node");
  EXPECT_EQ(table["columnDefinitions"].size(), cells.size());
}

// What a row carries, as includeObject asks (k8s.io/apimachinery's IncludeObjectPolicy):
// Metadata by default, the whole object (kubectl get --sort-by, -w), or nothing.
TEST(Kube, TableRowsCarryWhatIncludeObjectAsks) {
  const json node = {{"apiVersion", "v1"},
                     {"kind", "Node"},
                     {"metadata", {{"name", "gpu-a"}, {"uid", "u1"}}},
                     {"status", {{"capacity", {{"nvidia.com/gpu", "4"}}}}}};
  json whole = NodeTable({node}, "9", 0);
  IncludeObjects("Object", &whole);
  EXPECT_EQ(whole["rows"][0]["object"]["status"]["capacity"]["nvidia.com/gpu"], "4");
  json meta = NodeTable({node}, "9", 0);
  IncludeObjects("Metadata", &meta);
  EXPECT_EQ(meta["rows"][0]["object"]["kind"], "PartialObjectMetadata");
  EXPECT_EQ(meta["rows"][0]["object"]["metadata"]["uid"], "u1");
  EXPECT_FALSE(meta["rows"][0]["object"].contains("status"));
  json none = NodeTable({node}, "9", 0);
  IncludeObjects("None", &none);
  EXPECT_FALSE(none["rows"][0].contains("object"));
  EXPECT_EQ(none["rows"][0]["cells"][0], "gpu-a");
}

TEST(Kube, DiscoveryNamesEveryServedResource) {
  const json core = CoreResourceList();
  EXPECT_EQ(core["groupVersion"], "v1");
  std::vector<std::string> core_names;
  for (const json& r : core["resources"]) core_names.push_back(r["name"]);
  EXPECT_EQ(core_names, (std::vector<std::string>{"pods", "configmaps", "resourcequotas", "events",
                                                  "namespaces", "nodes", "services", "pods/log",
                                                  "pods/eviction"}));
  EXPECT_EQ(core["resources"][5]["namespaced"], false);
  // kubectl drain evicts only where pods/eviction names its group and version.
  EXPECT_EQ(core["resources"].back()["kind"], "Eviction");
  EXPECT_EQ(core["resources"].back()["group"], "policy");
  EXPECT_EQ(core["resources"].back()["version"], "v1");
  // Aggregated discovery lists them under pods, as subresources.
  const json aggregated = AggregatedDiscovery(true);
  json pods;
  for (const json& r : aggregated["items"][0]["versions"][0]["resources"]) {
    EXPECT_EQ(r["resource"].get<std::string>().find('/'), std::string::npos) << r.dump();
    if (r["resource"] == "pods") pods = r;
  }
  ASSERT_TRUE(pods.is_object());
  ASSERT_EQ(pods["subresources"].size(), 2u) << pods.dump();
  EXPECT_EQ(pods["subresources"][1]["subresource"], "eviction");
  EXPECT_EQ(pods["subresources"][1]["responseKind"],
            json({{"group", "policy"}, {"version", "v1"}, {"kind", "Eviction"}}));
  EXPECT_EQ(core["resources"][0]["shortNames"], json::array({"po"}));
  // Kubernetes' groups first (kubectl resolves "jobs" to batch/v1 as with kube-apiserver), then
  // Kueue's, Volcano's and Kubeflow's, Tessera's last.
  const json groups = ApiGroupList();
  std::vector<std::string> names;
  for (const json& g : groups["groups"]) names.push_back(g["name"]);
  EXPECT_EQ(names, (std::vector<std::string>{"batch", "scheduling.k8s.io", "kueue.x-k8s.io",
                                             "scheduling.volcano.sh", "batch.volcano.sh",
                                             "bus.volcano.sh", "kubeflow.org", "events.k8s.io",
                                             "tessera.io", "metrics.k8s.io"}));
  // Volcano's Commands are carried out when created: create, get and list only.
  const json bus = KubeResourceList("bus.volcano.sh", "v1alpha1");
  ASSERT_EQ(bus["resources"].size(), 1u) << bus.dump();
  EXPECT_EQ(bus["resources"][0]["name"], "commands");
  EXPECT_EQ(bus["resources"][0]["verbs"], json::array({"create", "get", "list"}));
  const json& groups_list = groups["groups"];
  EXPECT_EQ(groups_list[groups_list.size() - 2]["preferredVersion"]["groupVersion"],
            "tessera.io/v1");
  EXPECT_EQ(groups_list.back()["preferredVersion"]["groupVersion"], "metrics.k8s.io/v1beta1");
  EXPECT_EQ(groups["groups"][2]["versions"].size(), 2u);  // Kueue: v1beta1 and v1alpha1
  const json tessera = TesseraResourceList();
  bool jobs = false;
  for (const json& r : tessera["resources"]) {
    if (r["name"] == "jobs") {
      jobs = true;
      EXPECT_EQ(r["kind"], "Job");
      EXPECT_EQ(r["namespaced"], true);
      EXPECT_NE(std::find(r["verbs"].begin(), r["verbs"].end(), "watch"), r["verbs"].end());
    }
  }
  EXPECT_TRUE(jobs);
  EXPECT_TRUE(WantsTable("application/json;as=Table;v=v1;g=meta.k8s.io,application/json"));
  EXPECT_FALSE(WantsTable("application/json"));
}

// A container killed by a signal ends with 128 + the signal, as the container runtimes report it
// (the issue's case: a killed worker read exitCode 0).
TEST(Kube, AKilledContainerEndsWith128PlusItsSignal) {
  const json job = json::parse(R"({"apiVersion": "tessera.io/v1", "kind": "Job",
      "metadata": {"name": "j", "namespace": "default", "uid": "u-1"},
      "spec": {"tasks": [{"name": "worker", "replicas": 2, "command": ["true"]}]},
      "status": {"phase": "Failed", "admittedAt": "2026-01-01T00:00:00Z", "pods": [
        {"name": "worker-0", "node": "n1", "state": {"phase": "Failed", "signal": 9}},
        {"name": "worker-1", "node": "n1", "state": {"phase": "Failed", "exitCode": 3}}]}})");
  const std::vector<json> pods = JobPods(job);
  ASSERT_EQ(pods.size(), 2u);
  const json killed = pods[0]["status"]["containerStatuses"][0]["state"]["terminated"];
  EXPECT_EQ(killed["exitCode"], 137) << killed.dump();
  EXPECT_EQ(killed["signal"], 9);
  EXPECT_EQ(killed["reason"], "Error");
  EXPECT_EQ(pods[1]["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"], 3);
}

// A container that never started (no runtime for its image) has no exit code of its own: 128
// and StartError, as containerd reports a failed start, not 0 and Error (which read as if it
// ran); one that succeeded reads 0 and Completed.
TEST(Kube, AContainerThatNeverStartedEndsWithStartError) {
  const json job = json::parse(R"({"apiVersion": "tessera.io/v1", "kind": "Job",
      "metadata": {"name": "j", "namespace": "default", "uid": "u-1"},
      "spec": {"tasks": [{"name": "worker", "replicas": 2, "command": ["true"]}]},
      "status": {"phase": "Failed", "admittedAt": "2026-01-01T00:00:00Z", "pods": [
        {"name": "worker-0", "node": "n1",
         "state": {"phase": "Failed", "message": "this node has no container runtime"}},
        {"name": "worker-1", "node": "n1", "state": {"phase": "Succeeded"}}]}})");
  const std::vector<json> pods = JobPods(job);
  ASSERT_EQ(pods.size(), 2u);
  const json failed = pods[0]["status"]["containerStatuses"][0]["state"]["terminated"];
  EXPECT_EQ(failed["exitCode"], 128) << failed.dump();
  EXPECT_EQ(failed["reason"], "StartError");
  EXPECT_EQ(failed["message"], "this node has no container runtime");
  const json done = pods[1]["status"]["containerStatuses"][0]["state"]["terminated"];
  EXPECT_EQ(done["exitCode"], 0) << done.dump();
  EXPECT_EQ(done["reason"], "Completed");
}

// Between the runs of a container that keeps ending, the agent backs off: the Pod view says
// CrashLoopBackOff as kubelet does (kubectl's STATUS column), not Running.
TEST(Kube, AContainerBackingOffReadsCrashLoopBackOff) {
  const json job = json::parse(R"({"apiVersion": "tessera.io/v1", "kind": "Job",
      "metadata": {"name": "j", "namespace": "default", "uid": "u-1"},
      "spec": {"tasks": [{"name": "worker", "command": ["false"]}]},
      "status": {"phase": "Admitted", "admittedAt": "2026-01-01T00:00:00Z", "pods": [
        {"name": "worker-0", "node": "n1", "state": {"phase": "Running", "restarts": 3,
         "reason": "CrashLoopBackOff", "message": "back-off 20s restarting the container"}}]}})");
  const std::vector<json> pods = JobPods(job);
  ASSERT_EQ(pods.size(), 1u);
  const json cs = pods[0]["status"]["containerStatuses"][0];
  EXPECT_EQ(cs["state"]["waiting"]["reason"], "CrashLoopBackOff") << cs.dump();
  EXPECT_EQ(cs["state"]["waiting"]["message"], "back-off 20s restarting the container");
  EXPECT_EQ(cs["restartCount"], 3);
  EXPECT_EQ(cs["ready"], false);
}

// A Pod no node can take reads as kube-scheduler's Warning FailedScheduling; a queue's wait
// and other kinds' events keep Tessera's reason.
TEST(Kube, UnschedulablePodEventsReadFailedScheduling) {
  auto event = [](const char* message) {
    return json{{"metadata", {{"name", "e1"}, {"namespace", "default"}}},
                {"spec",
                 {{"involvedObject", {{"kind", "Job"}, {"name", "p"}}},
                  {"reason", "Pending"},
                  {"type", "Normal"},
                  {"message", message}}}};
  };
  const ObjectRef pod{"v1", "Pod", "u1"};
  const json e = KubeEvent(event("0/2 nodes are available: 2 insufficient free GPUs."), &pod);
  EXPECT_EQ(e["reason"], "FailedScheduling");
  EXPECT_EQ(e["type"], "Warning");
  EXPECT_EQ(KubeEvent(event("queue team-a: nvidia.com/gpu ..."), &pod)["reason"], "Pending");
  const ObjectRef job{"batch/v1", "Job", "u2"};
  EXPECT_EQ(KubeEvent(event("0/2 nodes are available."), &job)["reason"], "Pending");
}

// A Volcano Job whose Tessera Job failed counts no pod as running, as its pods read (the
// issue's case: state Failed while running read 3, the workers not yet reported stopped).
// A pod that succeeded stays Succeeded.
TEST(Kube, AFailedVolcanoJobCountsNoPodRunning) {
  auto objs = TranslateManifest(R"(
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: train}
spec:
  minAvailable: 4
  tasks:
  - replicas: 4
    name: worker
    template:
      spec:
        containers: [{name: main, image: busybox}]
        restartPolicy: Never
)",
                                "inline", "default");
  ASSERT_TRUE(objs.ok()) << objs.status().message();
  json job = (*objs)[0];
  job["metadata"]["uid"] = "u-1";
  job["metadata"]["resourceVersion"] = "7";
  job["status"] = json::parse(R"({"phase": "Failed", "admittedAt": "2026-01-01T00:00:00Z",
      "pods": [{"name": "worker-0", "node": "n1", "state": {"phase": "Failed", "exitCode": 1}},
               {"name": "worker-1", "node": "n1", "state": {"phase": "Running"}},
               {"name": "worker-2", "node": "n1", "state": {"phase": "Running"}},
               {"name": "worker-3", "node": "n1", "state": {"phase": "Succeeded"}}]})");
  const json view = KubeObject(*FindKubeKind("batch.volcano.sh", "v1alpha1", "jobs"), job);
  ASSERT_TRUE(view.is_object()) << job.dump();
  EXPECT_EQ(view["status"]["state"]["phase"], "Failed") << view["status"].dump();
  EXPECT_EQ(view["status"]["running"], 0);
  EXPECT_EQ(view["status"]["failed"], 3);
  EXPECT_EQ(view["status"]["succeeded"], 1);
  const std::vector<json> pods = JobPods(job);
  ASSERT_EQ(pods.size(), 4u);
  EXPECT_EQ(pods[1]["status"]["phase"], "Failed");
  EXPECT_EQ(pods[3]["status"]["phase"], "Succeeded");
}

}  // namespace
}  // namespace tessera::api
