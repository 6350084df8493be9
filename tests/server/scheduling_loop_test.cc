#include "server/scheduling_loop.h"

#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>
#include <thread>

#include "server/api_server.h"
#include "server/loop_fixture.h"

namespace tessera::server {
namespace {

using nlohmann::json;

// Two nodes of 8 A100-80GB each; gpu-b's GPU 7 is shared and GPU 6 split into MIG instances.
constexpr char kCluster[] = R"(
apiVersion: tessera.io/v1
kind: Node
metadata: {name: gpu-a, labels: {pool: a100, nvidia.com/gpu.count: "8"}}
status:
  allocatable: {cpu: "64", memory: 512Gi}
  gpus:
  - {index: 0, uuid: GPU-a0, model: A100-80GB, memoryMiB: 81920, numaNode: 0}
  - {index: 1, uuid: GPU-a1, model: A100-80GB, memoryMiB: 81920, numaNode: 0}
  - {index: 2, uuid: GPU-a2, model: A100-80GB, memoryMiB: 81920, numaNode: 0}
  - {index: 3, uuid: GPU-a3, model: A100-80GB, memoryMiB: 81920, numaNode: 0}
  - {index: 4, uuid: GPU-a4, model: A100-80GB, memoryMiB: 81920, numaNode: 1}
  - {index: 5, uuid: GPU-a5, model: A100-80GB, memoryMiB: 81920, numaNode: 1}
  - {index: 6, uuid: GPU-a6, model: A100-80GB, memoryMiB: 81920, numaNode: 1}
  - {index: 7, uuid: GPU-a7, model: A100-80GB, memoryMiB: 81920, numaNode: 1}
---
apiVersion: tessera.io/v1
kind: Node
metadata: {name: gpu-b, labels: {pool: a100, nvidia.com/gpu.count: "8", role: mixed}}
status:
  allocatable: {cpu: "64", memory: 512Gi}
  gpus:
  - {index: 0, uuid: GPU-b0, model: A100-80GB, memoryMiB: 81920}
  - {index: 1, uuid: GPU-b1, model: A100-80GB, memoryMiB: 81920}
  - {index: 2, uuid: GPU-b2, model: A100-80GB, memoryMiB: 81920}
  - {index: 3, uuid: GPU-b3, model: A100-80GB, memoryMiB: 81920}
  - {index: 4, uuid: GPU-b4, model: A100-80GB, memoryMiB: 81920}
  - {index: 5, uuid: GPU-b5, model: A100-80GB, memoryMiB: 81920}
  - {index: 6, uuid: GPU-b6, model: A100-80GB, memoryMiB: 81920}
  - {index: 7, uuid: GPU-b7, model: A100-80GB, memoryMiB: 81920}
---
apiVersion: tessera.io/v1
kind: GpuSharingConfig
metadata: {name: b7-shared}
spec: {nodeSelector: {role: mixed}, gpus: ["7"], shared: {mps: true}}
---
apiVersion: tessera.io/v1
kind: GpuSharingConfig
metadata: {name: b6-mig}
spec: {nodeSelector: {role: mixed}, gpus: [GPU-b6], mig: {layout: {1g.10gb: 7}}}
)";

// Two priority classes, and Pods of each on node gpu-a of kCluster: `batch` (low, all 8 GPUs)
// and `urgent` (high, 4 GPUs).
constexpr char kLowAndHighPriority[] = R"(
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: low}
value: 10
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: high}
value: 1000
)";
constexpr char kBatchPod[] = R"(
apiVersion: v1
kind: Pod
metadata: {name: batch}
spec:
  priorityClassName: low
  nodeSelector: {kubernetes.io/hostname: gpu-a}
  containers: [{name: c, command: ["true"], resources: {limits: {nvidia.com/gpu: 8}}}]
)";
constexpr char kUrgentPod[] = R"(
apiVersion: v1
kind: Pod
metadata: {name: urgent}
spec:
  priorityClassName: high
  nodeSelector: {kubernetes.io/hostname: gpu-a}
  containers: [{name: c, command: ["true"], resources: {limits: {nvidia.com/gpu: 4}}}]
)";

TEST_F(LoopTest, BindsJobsToExactDevicesAndExplainsTheRest) {
  Apply(kCluster);
  Apply(R"(
apiVersion: v1
kind: Pod
metadata: {name: two-gpus}
spec:
  containers: [{name: c, resources: {limits: {nvidia.com/gpu: 2}}}]
  nodeSelector: {nvidia.com/gpu.count: "8"}
---
apiVersion: v1
kind: Pod
metadata: {name: cgpu}
spec:
  containers: [{name: c, resources: {limits: {aliyun.com/gpu-mem: 4}}}]
---
apiVersion: v1
kind: Pod
metadata: {name: slice}
spec:
  containers: [{name: c, resources: {limits: {nvidia.com/mig-1g.10gb: 1}}}]
---
apiVersion: v1
kind: Pod
metadata: {name: lost, labels: {kueue.x-k8s.io/queue-name: nope}}
spec:
  containers: [{name: c, resources: {limits: {nvidia.com/gpu: 1}}}]
---
apiVersion: v1
kind: Pod
metadata: {name: huge}
spec:
  containers: [{name: c, resources: {limits: {nvidia.com/gpu: 9}}}]
)");
  const CycleSummary s = Cycle();
  EXPECT_EQ(s.admitted, 3);
  EXPECT_TRUE(s.config_error.empty()) << s.config_error;

  json two = Job("two-gpus");
  ASSERT_EQ(two["status"]["phase"], "Admitted") << two.dump();
  json pod = two["status"]["pods"][0];
  EXPECT_EQ(pod["devices"].size(), 2u);
  EXPECT_EQ(pod["devices"][0]["kind"], "whole");
  const std::string node = pod["node"];
  ASSERT_FALSE(Events("two-gpus").empty());
  EXPECT_EQ(Events("two-gpus").back().rfind("Scheduled: Scheduled to " + node + " GPUs ", 0), 0u)
      << Events("two-gpus").back();

  json cgpu = Job("cgpu")["status"]["pods"][0];
  EXPECT_EQ(cgpu["node"], "gpu-b");
  EXPECT_EQ(cgpu["devices"][0]["kind"], "share");
  EXPECT_EQ(cgpu["devices"][0]["uuid"], "GPU-b7");
  EXPECT_EQ(cgpu["devices"][0]["memoryMiB"], 4096);
  EXPECT_EQ(cgpu["devices"][0]["mps"], true);  // the card's shares go through MPS
  json slice = Job("slice")["status"]["pods"][0];
  EXPECT_EQ(slice["devices"][0]["uuid"], "GPU-b6");
  EXPECT_EQ(slice["devices"][0]["migProfile"], "1g.10gb");

  EXPECT_EQ(Job("lost")["status"]["phase"], "Pending");
  EXPECT_EQ(Job("lost")["status"]["message"], "local queue default/nope does not exist");
  EXPECT_NE(Job("huge")["status"]["message"].get<std::string>().find("0/2 nodes are available"),
            std::string::npos);

  // Nothing changed: the next cycle writes nothing.
  EXPECT_EQ(Cycle().writes, 0);
}

// A job of several pods meets at its first placed pod: that node's address and a port no other
// distributed job there holds; a job of one pod has no rendezvous.
TEST_F(LoopTest, DistributedJobsGetARendezvousPortOfTheirOwn) {
  ApplyNode("n1", 5, "10.0.0.1");
  const auto job = [](const std::string& name, int replicas) {
    return "apiVersion: tessera.io/v1\nkind: Job\nmetadata: {name: " + name +
           "}\nspec:\n  tasks:\n  - {name: worker, replicas: " + std::to_string(replicas) +
           ", command: [\"true\"], resources: {limits: {nvidia.com/gpu: 1}}}\n";
  };
  Apply(job("first", 2));
  Apply(job("second", 2));
  Apply(job("single", 1));
  Cycle();
  const json first = Job("first")["status"];
  ASSERT_EQ(first["phase"], "Admitted") << first.dump();
  EXPECT_EQ(first["rendezvous"], json::parse(R"({"masterNode": "n1", "masterAddr": "10.0.0.1",
      "masterPort": 29500, "worldSize": 2})"));
  EXPECT_EQ(first["pods"][1]["address"], "10.0.0.1");
  // Each pod has a port of its own on its node too; the first pod's is the master's.
  EXPECT_EQ(first["pods"][0]["port"], 29500);
  EXPECT_EQ(first["pods"][1]["port"], 29501);
  EXPECT_EQ(Job("second")["status"]["rendezvous"]["masterPort"], 29502);
  EXPECT_EQ(Job("second")["status"]["pods"][1]["port"], 29503);
  EXPECT_FALSE(Job("single")["status"]["pods"][0].contains("port"));
  EXPECT_FALSE(Job("single")["status"].contains("rendezvous"));
  // A port is free again once its job is gone.
  DeleteJob("first");
  Apply(job("third", 2));
  Cycle();
  EXPECT_EQ(Job("third")["status"]["rendezvous"]["masterPort"], 29500);
}

// Kubernetes' Job lifetime: activeDeadlineSeconds fails a Job active that long after it was
// admitted (DeadlineExceeded); ttlSecondsAfterFinished deletes a finished Job that long after.
TEST_F(LoopTest, DeadlinesFailJobsAndFinishedJobsGoAfterTheirTtl) {
  ApplyNode("n1", 1);
  Apply(R"(
apiVersion: batch/v1
kind: Job
metadata: {name: bounded}
spec:
  activeDeadlineSeconds: 5
  ttlSecondsAfterFinished: 3
  template:
    spec:
      restartPolicy: Never
      containers: [{name: c, command: ["sleep", "600"], resources: {limits: {nvidia.com/gpu: 1}}}]
)");
  Cycle();
  ASSERT_EQ(Job("bounded")["status"]["phase"], "Admitted");
  for (int i = 0; i < 4; ++i) Cycle();  // 4 s after admission
  EXPECT_EQ(Job("bounded")["status"]["phase"], "Admitted");
  Cycle();  // 5 s
  const json failed = Job("bounded")["status"];
  EXPECT_EQ(failed["phase"], "Failed");
  EXPECT_EQ(failed["reason"], "DeadlineExceeded");
  EXPECT_EQ(failed["message"], "Job was active longer than specified deadline");
  const std::vector<std::string> events = Events("bounded");
  ASSERT_FALSE(events.empty());
  EXPECT_TRUE(events.back().starts_with("DeadlineExceeded: ")) << events.back();
  // Its GPU is free for the next job at once.
  Apply(R"(
apiVersion: tessera.io/v1
kind: Job
metadata: {name: next}
spec:
  tasks: [{name: main, command: ["true"], resources: {limits: {nvidia.com/gpu: 1}}}]
)");
  Cycle();
  EXPECT_EQ(Job("next")["status"]["phase"], "Admitted");
  Cycle();  // 2 s after it failed: kept
  EXPECT_EQ(Get("/apis/tessera.io/v1/namespaces/default/jobs")["items"].size(), 2u);
  Cycle();  // 3 s: gone
  const json left = Get("/apis/tessera.io/v1/namespaces/default/jobs");
  ASSERT_EQ(left["items"].size(), 1u);
  EXPECT_EQ(left["items"][0]["metadata"]["name"], "next");
}

// A Job that sets no ttlSecondsAfterFinished goes the server's default for it after it ended
// (SchedulingLoopOptions::finished_ttl_ms, `--ttl-seconds-after-finished`), so that ended
// state does not pile up; one that sets its own keeps to it, and -1 keeps ended Jobs.
TEST_F(LoopTest, EndedJobsGoAfterTheServersDefaultTtlUnlessTheySetTheirOwn) {
  SchedulingLoopOptions options;
  options.finished_ttl_ms = 3000;
  loop_ = SchedulingLoop::Create(*plane_, options).value();
  ApplyNode("n1", 2);
  auto job = [](const std::string& name, const std::string& extra) {
    return "apiVersion: batch/v1\nkind: Job\nmetadata: {name: " + name +
           "}\nspec:\n  activeDeadlineSeconds: 1\n" + extra +
           "  template:\n    spec:\n      restartPolicy: Never\n      containers: [{name: c, "
           "command: [sleep, \"600\"], resources: {limits: {nvidia.com/gpu: 1}}}]\n";
  };
  Apply(job("plain", ""));
  Apply(job("own-ttl", "  ttlSecondsAfterFinished: 100\n"));
  Cycle();
  ASSERT_EQ(Job("plain")["status"]["phase"], "Admitted");
  Cycle();  // 1 s after admission: both fail
  ASSERT_EQ(Job("plain")["status"]["phase"], "Failed");
  ASSERT_EQ(Job("own-ttl")["status"]["phase"], "Failed");
  Cycle();
  Cycle();  // 2 s after: kept
  EXPECT_EQ(Get("/apis/tessera.io/v1/namespaces/default/jobs")["items"].size(), 2u);
  Cycle();  // 3 s: the one without a TTL of its own is gone
  json left = Get("/apis/tessera.io/v1/namespaces/default/jobs");
  ASSERT_EQ(left["items"].size(), 1u);
  EXPECT_EQ(left["items"][0]["metadata"]["name"], "own-ttl");

  // -1: ended Jobs are kept.
  options.finished_ttl_ms = -1;
  loop_ = SchedulingLoop::Create(*plane_, options).value();
  Apply(job("kept", ""));
  Cycle();
  Cycle();
  ASSERT_EQ(Job("kept")["status"]["phase"], "Failed");
  for (int i = 0; i < 10; ++i) Cycle();
  EXPECT_EQ(Job("kept")["status"]["phase"], "Failed");
}

// Kueue's ClusterQueue namespaceSelector (clusterqueue_types.go: "Defaults to null which is a
// nothing selector (no namespaces eligible). If set to an empty selector {}, then all
// namespaces are eligible"), read against the namespaces' labels as written.
TEST_F(LoopTest, KueueAdmitsOnlyTheNamespacesAClusterQueueSelects) {
  Apply(kCluster);
  Apply(R"(
apiVersion: v1
kind: Namespace
metadata: {name: ml, labels: {team: research}}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata: {name: any}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: research}
spec:
  namespaceSelector:
    matchExpressions: [{key: team, operator: In, values: [research, vision]}]
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors: [{name: any, resources: [{name: nvidia.com/gpu, nominalQuota: 8}]}]
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: unselected}
spec:
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors: [{name: any, resources: [{name: nvidia.com/gpu, nominalQuota: 8}]}]
)");
  const auto queued = [&](const std::string& ns, const std::string& lq, const std::string& cq) {
    Apply("apiVersion: kueue.x-k8s.io/v1beta1\nkind: LocalQueue\nmetadata: {name: " + lq +
          ", namespace: " + ns + "}\nspec: {clusterQueue: " + cq +
          "}\n---\napiVersion: v1\nkind: Pod\nmetadata: {name: " + lq + "-pod, namespace: " + ns +
          ", labels: {kueue.x-k8s.io/queue-name: " + lq +
          "}}\nspec:\n  containers: [{name: c, resources: {limits: {nvidia.com/gpu: 1}}}]\n");
  };
  queued("ml", "lq", "research");
  queued("web", "lq", "research");
  queued("ml", "none", "unselected");
  Cycle();
  EXPECT_EQ(Job("lq-pod", "ml")["status"]["phase"], "Admitted");
  const json web = Job("lq-pod", "web")["status"];
  EXPECT_EQ(web["phase"], "Pending");
  EXPECT_EQ(web["message"],
            "namespace web does not match the namespaceSelector of ClusterQueue research (Kueue: "
            "\"Workload namespace doesn't match ClusterQueue selector\")");
  // Without a selector, no namespace: not even one the other queue takes.
  EXPECT_EQ(Job("none-pod", "ml")["status"]["phase"], "Pending");
  // Labelled, web's workload is admitted at the next cycle.
  Apply("apiVersion: v1\nkind: Namespace\nmetadata: {name: web, labels: {team: vision}}\n");
  Cycle();
  EXPECT_EQ(Job("lq-pod", "web")["status"]["phase"], "Admitted");
  EXPECT_EQ(Job("none-pod", "ml")["status"]["phase"], "Pending");
}

// Volcano's PodGroup minTaskMember: a member Job places at least that many pods of each named
// task with its gang (here the parameter server, which the gang of 2 would otherwise leave out
// on a node with room for 2 of its 3 pods).
TEST_F(LoopTest, APodGroupsMinTaskMemberIsPlacedWithTheGang) {
  ApplyNode("n1", 2);
  for (const char* group : {"plain", "tasks"}) {
    Apply(std::string(R"(
apiVersion: scheduling.volcano.sh/v1beta1
kind: PodGroup
metadata: {name: )") +
          group + R"(}
spec:
  minMember: 2
)" + (std::string(group) == "tasks" ? "  minTaskMember: {ps: 1}\n" : "") +
          R"(---
apiVersion: tessera.io/v1
kind: Job
metadata: {name: )" +
          group + R"(}
spec:
  podGroup: )" +
          group + R"(
  tasks:
  - {name: worker, replicas: 2, command: ["true"], resources: {limits: {nvidia.com/gpu: 1}}}
  - {name: ps, command: ["true"], resources: {limits: {nvidia.com/gpu: 1}}}
)");
    Cycle();
    const json status = Job(group)["status"];
    ASSERT_EQ(status["phase"], "Admitted") << status.dump();
    const bool ps_placed = status["pods"][2].is_object();
    EXPECT_EQ(ps_placed, std::string(group) == "tasks") << status.dump();
    DeleteJob(group);
    Cycle();
  }
}

TEST_F(LoopTest, QuotasQueuesAndPreemption) {
  Apply(kCluster);
  Apply(kLowAndHighPriority);
  Apply(R"(
apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata: {name: a100}
spec: {nodeLabels: {pool: a100}}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: team-a}
spec:
  namespaceSelector: {}
  preemption: {withinClusterQueue: LowerPriority}
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors: [{name: a100, resources: [{name: nvidia.com/gpu, nominalQuota: 8}]}]
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {name: main, namespace: team-a}
spec: {clusterQueue: team-a}
---
apiVersion: batch/v1
kind: Job
metadata: {name: train, namespace: team-a, labels: {kueue.x-k8s.io/queue-name: main}}
spec:
  parallelism: 2
  template:
    spec:
      priorityClassName: low
      containers: [{name: c, resources: {limits: {nvidia.com/gpu: 4}}}]
)");
  EXPECT_EQ(Cycle().admitted, 1);
  EXPECT_EQ(Job("train", "team-a")["status"]["phase"], "Admitted");
  EXPECT_EQ(Job("train", "team-a")["status"]["flavors"]["nvidia.com/gpu"], "a100");

  // The queue's 8 GPUs are used: a low-priority job waits, naming the quota.
  Apply(R"(
apiVersion: batch/v1
kind: Job
metadata: {name: more, namespace: team-a, labels: {kueue.x-k8s.io/queue-name: main}}
spec:
  template:
    spec:
      priorityClassName: low
      containers: [{name: c, resources: {limits: {nvidia.com/gpu: 1}}}]
)");
  Cycle();
  EXPECT_NE(Job("more", "team-a")["status"]["message"].get<std::string>().find("queue team-a"),
            std::string::npos)
      << Job("more", "team-a").dump();

  // A high-priority job preempts the gang (whole), then runs.
  Apply(R"(
apiVersion: batch/v1
kind: Job
metadata: {name: urgent, namespace: team-a, labels: {kueue.x-k8s.io/queue-name: main}}
spec:
  template:
    spec:
      priorityClassName: high
      containers: [{name: c, resources: {limits: {nvidia.com/gpu: 4}}}]
)");
  const CycleSummary p = Cycle();
  EXPECT_EQ(p.preempted, 1);
  EXPECT_EQ(Job("train", "team-a")["status"]["phase"], "Pending");
  EXPECT_EQ(Events("train", "team-a").back().rfind("Preempted: preempted by team-a/urgent", 0), 0u)
      << Events("train", "team-a").back();
  EXPECT_NE(Events("train", "team-a").back().find("[InClusterQueue]"), std::string::npos);
  // Kueue's workload conditions: evicted by preemption, with the preemption's reason.
  auto condition = [&](const char* job, const char* type) {
    const json obj = Job(job, "team-a");
    for (const json& c : obj["status"]["conditions"]) {
      if (c["type"] == type)
        return c["status"].get<std::string>() + "/" + c["reason"].get<std::string>();
    }
    return std::string("absent");
  };
  EXPECT_EQ(condition("train", "Evicted"), "True/Preempted");
  EXPECT_EQ(condition("train", "Preempted"), "True/InClusterQueue");
  EXPECT_EQ(condition("train", "QuotaReserved"), "False/Preempted");
  // The victim names its preemptor, which holds the quota it freed until admitted.
  EXPECT_EQ(Job("train", "team-a")["status"]["preemptedBy"]["workload"], "team-a/urgent")
      << Job("train", "team-a").dump();
  Cycle();
  EXPECT_EQ(Job("urgent", "team-a")["status"]["phase"], "Admitted");
  EXPECT_EQ(Job("train", "team-a")["status"]["preemptedBy"]["workload"], "team-a/urgent");
  EXPECT_EQ(condition("urgent", "QuotaReserved"), "True/QuotaReserved");
  EXPECT_EQ(condition("urgent", "Admitted"), "True/Admitted");
  // Waiting again, the preempted job still says why it was evicted.
  EXPECT_EQ(condition("train", "Preempted"), "True/InClusterQueue");
  EXPECT_EQ(condition("train", "QuotaReserved"), "False/Pending") << Job("train", "team-a").dump();

  // A namespace quota of 1 GPU in team-b holds a 2-GPU pod back.
  Apply(R"(
apiVersion: v1
kind: ResourceQuota
metadata: {name: q, namespace: team-b}
spec: {hard: {requests.nvidia.com/gpu: 1}}
---
apiVersion: v1
kind: Pod
metadata: {name: two, namespace: team-b}
spec:
  containers: [{name: c, resources: {limits: {nvidia.com/gpu: 2}}}]
)");
  Cycle();
  EXPECT_NE(
      Job("two", "team-b")["status"]["message"].get<std::string>().find("namespace team-b quota"),
      std::string::npos)
      << Job("two", "team-b").dump();
  const std::string m = Metrics();
  EXPECT_NE(m.find("tessera_queue_nominal_quota{flavor=\"a100\",queue=\"team-a\","
                   "resource=\"nvidia.com/gpu\"} 8\n"),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("tessera_scheduling_latency_seconds_count{queue=\"team-a\"} "),
            std::string::npos);
}

TEST_F(LoopTest, BindingsSurviveARestartAndKeepTheirDevices) {
  Apply(kCluster);
  Apply(R"(
apiVersion: v1
kind: Pod
metadata: {name: big}
spec:
  containers: [{name: c, resources: {limits: {nvidia.com/gpu: 8}}}]
)");
  EXPECT_EQ(Cycle().admitted, 1);
  json before = Job("big")["status"];
  Open();  // a restarted server: the store is all it has
  const CycleSummary s = Cycle();
  EXPECT_EQ(s.admitted, 0);
  EXPECT_EQ(s.writes, 0);
  EXPECT_EQ(Job("big")["status"], before);
  // The bound node is full: a 6-GPU pod goes to the other node (whose other two cards are MIG
  // and shared), a second one waits.
  Apply(R"(
apiVersion: v1
kind: Pod
metadata: {name: big2}
spec:
  containers: [{name: c, resources: {limits: {nvidia.com/gpu: 6}}}]
---
apiVersion: v1
kind: Pod
metadata: {name: big3}
spec:
  containers: [{name: c, resources: {limits: {nvidia.com/gpu: 6}}}]
)");
  Cycle();
  ASSERT_EQ(Job("big2")["status"]["phase"], "Admitted");
  EXPECT_NE(Job("big2")["status"]["pods"][0]["node"], before["pods"][0]["node"]);
  EXPECT_EQ(Job("big3")["status"]["phase"], "Pending");
  // User updates keep the status: re-applying the job does not unbind it.
  Apply(R"(
apiVersion: v1
kind: Pod
metadata: {name: big, labels: {touched: "yes"}}
spec:
  containers: [{name: c, resources: {limits: {nvidia.com/gpu: 8}}}]
)");
  EXPECT_EQ(Job("big")["status"], before);
}

TEST_F(LoopTest, AnInvalidQueueStopsOnlyItsOwnWork) {
  // Queue q names a flavor that does not exist: it is inactive and its job waits with the
  // reason; a job outside any queue still runs.
  Apply(kCluster);
  Apply(R"(
apiVersion: tessera.io/v1
kind: Queue
metadata: {name: q}
spec:
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors: [{name: missing-flavor, resources: [{name: nvidia.com/gpu, nominalQuota: 8}]}]
---
apiVersion: tessera.io/v1
kind: LocalQueue
metadata: {name: main, namespace: default}
spec: {clusterQueue: q}
---
apiVersion: v1
kind: Pod
metadata: {name: queued, labels: {kueue.x-k8s.io/queue-name: main}}
spec:
  containers: [{name: c, resources: {limits: {nvidia.com/gpu: 1}}}]
---
apiVersion: v1
kind: Pod
metadata: {name: free}
spec:
  containers: [{name: c, resources: {limits: {nvidia.com/gpu: 1}}}]
)");
  const CycleSummary s = Cycle();
  EXPECT_TRUE(s.config_error.empty());
  EXPECT_EQ(s.inactive_queues, 1);
  EXPECT_EQ(s.admitted, 1);
  EXPECT_EQ(Job("free")["status"]["phase"], "Admitted");
  const std::string why = Job("queued")["status"]["message"];
  EXPECT_EQ(why.rfind("queue q is inactive: ", 0), 0u) << why;
  EXPECT_NE(why.find("unknown resource flavor \"missing-flavor\""), std::string::npos) << why;
  json q = Get("/apis/tessera.io/v1/queues/q");
  EXPECT_EQ(q["status"]["active"], false);
}

TEST_F(LoopTest, MetricsSpeakDcgmAndSayWhoHoldsEachGpu) {
  // A node with telemetry for two GPUs; a job bound to one of them.
  Apply(R"(
apiVersion: tessera.io/v1
kind: Node
metadata: {name: n1}
status:
  allocatable: {cpu: "8", memory: 64Gi}
  gpus:
  - {index: 0, uuid: GPU-a, model: H100-80GB, memoryMiB: 81920}
  - {index: 1, uuid: GPU-b, model: H100-80GB, memoryMiB: 81920, health: Unhealthy}
  telemetry:
  - {index: 0, utilizationPct: 87, memoryUsedMiB: 1000, memoryFreeMiB: 80920, temperatureC: 91,
     powerMw: 350000, smClockMhz: 1980, xidCount: 0, nvlinkDataKiB: 123456}
  - {index: 1, utilizationPct: 0, memoryUsedMiB: 0, memoryFreeMiB: 81920, temperatureC: 30,
     powerMw: 60000, smClockMhz: 0, xidCount: 2}
---
apiVersion: v1
kind: Pod
metadata: {name: train, namespace: team-a}
spec:
  containers: [{name: worker, resources: {limits: {nvidia.com/gpu: 1}}}]
)");
  ASSERT_EQ(Cycle().admitted, 1);
  HttpRequest r;
  r.method = "GET";
  r.path = "/metrics";
  r.authorization = "Bearer " + admin_;
  const std::string m = api_->Handle(r).body;
  auto has = [&](const std::string& line) {
    EXPECT_NE(m.find(line), std::string::npos) << "missing: " << line << "\n" << m.substr(0, 3000);
  };
  has("DCGM_FI_DEV_GPU_TEMP{Hostname=\"n1\",UUID=\"GPU-a\",device=\"nvidia0\",gpu=\"0\",job="
      "\"train\","
      "modelName=\"H100-80GB\",namespace=\"team-a\",task=\"worker\"} 91");
  has("DCGM_FI_DEV_POWER_USAGE{Hostname=\"n1\",UUID=\"GPU-a\"");
  has("# TYPE DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL counter\nDCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL{"
      "Hostname=\"n1\",UUID=\"GPU-a\"");
  has("task=\"worker\"} 123456\n");
  EXPECT_EQ(m.find("DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL{Hostname=\"n1\",UUID=\"GPU-b\""),
            std::string::npos);
  has("DCGM_FI_DEV_XID_ERRORS{Hostname=\"n1\",UUID=\"GPU-b\",device=\"nvidia1\",gpu=\"1\",job=\"\","
      "modelName=\"H100-80GB\",namespace=\"\",task=\"\"} 2");
  has("tessera_workloads{phase=\"Admitted\",queue=\"tessera-unqueued\"} 1");
  // The store: the cycle's commits timed; the feed has delivered all it holds.
  has("tessera_store_watch_lag_revisions 0\n");
  EXPECT_EQ(m.find("tessera_store_commit_duration_seconds_count 0\n"), std::string::npos);
  has("tessera_store_commit_duration_seconds_count ");
  has("tessera_namespace_gpus_allocated{namespace=\"team-a\"} 1");
  has("tessera_cluster_gpu_allocation_ratio 0.5");
  has("tessera_gpu_unhealthy{Hostname=\"n1\",UUID=\"GPU-b\",gpu=\"1\"} 1");
  has("tessera_admissions_total 1");
  has("tessera_scheduling_cycle_duration_seconds_count 1");
  r.authorization = "";
  EXPECT_EQ(api_->Handle(r).status, 401);
}

// One node with one shared A100 whose agent reports `util` percent; two jobs of half a GPU each.
std::string SharedNode(int util) {
  return R"(
apiVersion: tessera.io/v1
kind: Node
metadata: {name: n1, labels: {role: shared}}
status:
  allocatable: {cpu: "16", memory: 128Gi}
  gpus:
  - {index: 0, uuid: GPU-s0, model: A100-SXM4-80GB, memoryMiB: 81920}
  telemetry:
  - {index: 0, utilizationPct: )" +
         std::to_string(util) + R"(}
---
apiVersion: tessera.io/v1
kind: GpuSharingConfig
metadata: {name: shared}
spec: {nodeSelector: {role: shared}, shared: {}}
)";
}

constexpr char kHalfJobs[] = R"(
apiVersion: tessera.io/v1
kind: Job
metadata: {name: half-a, namespace: team-a}
spec:
  tasks: [{name: worker, resources: {limits: {tessera.io/gpu-milli: 500}}}]
---
apiVersion: tessera.io/v1
kind: Job
metadata: {name: half-b, namespace: team-b}
spec:
  tasks: [{name: worker, resources: {limits: {tessera.io/gpu-milli: 500}}}]
)";

TEST_F(LoopTest, AccountingChargesSharesByWhatTheyHoldAndSurvivesARestart) {
  constexpr int64_t kHour = 3'600'000;
  Apply(SharedNode(80));
  Apply(kHalfJobs);
  const int64_t t0 = now_ + 1000;
  ASSERT_EQ(Cycle().admitted, 2);
  EXPECT_EQ(Job("half-a", "team-a")["status"]["pods"][0]["devices"][0]["gpuMilli"], 500);
  // An hour in, the server restarts; the holdings stay open and keep counting.
  now_ = t0 + kHour - 1000;
  Cycle();
  Open();
  now_ = t0 + 2 * kHour - 1000;
  Cycle();
  // Both jobs end two hours after admission (the agent reports finishedAt).
  for (const char* ns : {"team-a", "team-b"}) {
    const std::string name = std::string("half-") + ns[5];
    json job = Job(name, ns);
    job["status"]["phase"] = "Succeeded";
    job["status"]["finishedAt"] = FormatTime(t0 + 2 * kHour);
    job["metadata"].erase("resourceVersion");
    Apply(job.dump());
  }
  now_ = t0 + 3 * kHour - 1000;
  Cycle();
  json usage = Get("/apis/tessera.io/v1/usage?by=namespace");
  ASSERT_EQ(usage["items"].size(), 2u) << usage.dump();
  for (const json& row : usage["items"]) {
    EXPECT_DOUBLE_EQ(row["gpuHours"].get<double>(), 1.0) << row.dump();
    EXPECT_DOUBLE_EQ(row["cost"].get<double>(), 65.0) << row.dump();  // A100 at 65/h
    EXPECT_DOUBLE_EQ(row["idleGpuHours"].get<double>(), 0.0) << row.dump();
  }
  EXPECT_EQ(usage["currency"], "CNY");
  EXPECT_EQ(usage["items"][0]["namespace"], "team-a");
  // A window: the last 90 minutes before now hold the jobs' last 30 minutes.
  usage = Get("/apis/tessera.io/v1/usage?by=job&since=90m");
  ASSERT_EQ(usage["items"].size(), 2u);
  EXPECT_EQ(usage["items"][1]["job"], "half-b");
  EXPECT_DOUBLE_EQ(usage["items"][1]["gpuHours"].get<double>(), 0.25);
  // A namespace token sees its own namespace only; bad parameters are named.
  HttpRequest r;
  r.method = "POST";
  r.path = "/apis/tessera.io/v1/tokens";
  r.authorization = "Bearer " + admin_;
  r.body = R"({"namespace": "team-b"})";
  const std::string token = json::parse(api_->Handle(r).body)["token"];
  r = HttpRequest{};
  r.method = "GET";
  r.path = "/apis/tessera.io/v1/usage";
  r.query = {{"by", "queue"}};
  r.authorization = "Bearer " + token;
  HttpResponse out = api_->Handle(r);
  ASSERT_EQ(out.status, 200) << out.body;
  usage = json::parse(out.body);
  ASSERT_EQ(usage["items"].size(), 1u);
  EXPECT_EQ(usage["items"][0]["queue"], "tessera-unqueued");
  EXPECT_DOUBLE_EQ(usage["items"][0]["gpuHours"].get<double>(), 1.0);
  for (auto [key, value, field] : {std::tuple{"by", "team", "by:"},
                                   {"since", "yesterday", "since:"},
                                   {"until", "soon", "until:"}}) {
    r.query = {{key, value}};
    out = api_->Handle(r);
    EXPECT_EQ(out.status, 400) << key;
    EXPECT_NE(out.body.find(field), std::string::npos) << out.body;
  }
  // Per interval (the console's charts): three hours by the hour, each job's half GPU in the
  // first two, nothing in the third; too many intervals, or too short, are refused.
  usage = Get("/apis/tessera.io/v1/usage?by=namespace&since=" + FormatTime(t0) +
              "&until=" + FormatTime(t0 + 3 * kHour) + "&step=1h");
  ASSERT_EQ(usage["series"].size(), 3u) << usage.dump();
  EXPECT_EQ(usage["series"][0]["start"], FormatTime(t0));
  EXPECT_EQ(usage["series"][2]["end"], FormatTime(t0 + 3 * kHour));
  for (int h = 0; h < 2; ++h) {
    ASSERT_EQ(usage["series"][h]["items"].size(), 2u) << usage["series"][h].dump();
    EXPECT_DOUBLE_EQ(usage["series"][h]["items"][1]["gpuHours"].get<double>(), 0.5);
  }
  EXPECT_TRUE(usage["series"][2]["items"].empty()) << usage["series"][2].dump();
  r.query = {{"since", "30d"}, {"step", "1m"}};
  out = api_->Handle(r);
  EXPECT_EQ(out.status, 400);
  EXPECT_NE(out.body.find("more than 1000 intervals"), std::string::npos) << out.body;
  r.query = {{"since", "1h"}, {"step", "1s"}};
  EXPECT_EQ(api_->Handle(r).status, 400);
}

TEST_F(LoopTest, AccountingChargesMigSlicesAndTimeSliceReplicasByTheirFraction) {
  constexpr int64_t kHour = 3'600'000;
  Apply(kCluster);
  Apply(R"(
apiVersion: tessera.io/v1
kind: GpuSharingConfig
metadata: {name: a0-sliced}
spec: {nodeSelector: {pool: a100}, gpus: ["0"], timeSlicing: {replicas: 4}}
---
apiVersion: v1
kind: Pod
metadata: {name: slice, namespace: mig}
spec:
  containers: [{name: c, resources: {limits: {nvidia.com/mig-1g.10gb: 1}}}]
---
apiVersion: v1
kind: Pod
metadata: {name: replica, namespace: ts}
spec:
  containers: [{name: c, resources: {limits: {nvidia.com/gpu.shared: 1}}}]
)");
  ASSERT_EQ(Cycle().admitted, 2);
  const json slice = Job("slice", "mig")["status"]["pods"][0]["devices"][0];
  const json replica = Job("replica", "ts")["status"]["pods"][0]["devices"][0];
  ASSERT_EQ(slice["kind"], "mig") << slice.dump();
  ASSERT_EQ(replica["kind"], "replica") << replica.dump();
  EXPECT_EQ(replica["gpuMilli"], 250);  // one of four replicas
  // A 1g.10gb slice is one of the seven compute slices of an A100 (rounded up).
  EXPECT_EQ(slice["gpuMilli"], 143);
  now_ += 2 * kHour - 1000;
  Cycle();
  const json usage = Get("/apis/tessera.io/v1/usage?by=namespace");
  ASSERT_EQ(usage["items"].size(), 2u) << usage.dump();
  EXPECT_EQ(usage["items"][0]["namespace"], "mig");
  EXPECT_NEAR(usage["items"][0]["gpuHours"].get<double>(), 2 * 0.143, 1e-9);
  EXPECT_EQ(usage["items"][1]["namespace"], "ts");
  EXPECT_NEAR(usage["items"][1]["gpuHours"].get<double>(), 0.5, 1e-9);
}

TEST_F(LoopTest, IdlePodsAreMarkedAndReclaimedByTheirQueuesPolicy) {
  constexpr int64_t kMin = 60'000;
  Apply(SharedNode(80));
  Apply(R"(
apiVersion: tessera.io/v1
kind: Queue
metadata: {name: research}
spec:
  idleReclaim: {after: 1h, maxPriority: 100}
---
apiVersion: tessera.io/v1
kind: LocalQueue
metadata: {name: default, namespace: team-a}
spec: {clusterQueue: research}
---
apiVersion: tessera.io/v1
kind: Job
metadata: {name: notebook, namespace: team-a}
spec:
  queue: default
  tasks: [{name: lab, resources: {limits: {tessera.io/gpu-milli: 500}}}]
)");
  ASSERT_EQ(Cycle().admitted, 1);
  // The gauge counts this cycle's own admission: half the GPU taken, the free half fragmented.
  EXPECT_NE(Metrics().find("tessera_cluster_gpu_fragmentation_ratio 1\n"), std::string::npos);
  // The GPU goes quiet (2%); after the 30 minute window the job is marked idle.
  Apply(SharedNode(2));
  const int64_t quiet = now_ + 1000;
  Cycle();
  now_ = quiet + 29 * kMin;
  Cycle();
  EXPECT_FALSE(Job("notebook", "team-a")["status"].contains("idle"));
  now_ = quiet + 30 * kMin - 1000;
  Cycle();
  json job = Job("notebook", "team-a");
  ASSERT_TRUE(job["status"].contains("idle")) << job.dump();
  EXPECT_EQ(job["status"]["idle"]["pods"], json::array({"lab-0"}));
  EXPECT_EQ(job["status"]["idle"]["since"], FormatTime(quiet));
  const auto events = Events("notebook", "team-a");
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events.back().rfind("Idle: pod lab-0 held GPUs below 5% utilisation since ", 0), 0u)
      << events.back();
  HttpRequest r;
  r.method = "GET";
  r.path = "/metrics";
  r.authorization = "Bearer " + admin_;
  const std::string m = api_->Handle(r).body;
  EXPECT_NE(
      m.find("tessera_idle_gpus_allocated{job=\"notebook\",namespace=\"team-a\",pod=\"lab-0\","
             "queue=\"research\"} 0.5"),
      std::string::npos)
      << m;
  // Busy again: the mark goes.
  Apply(SharedNode(60));
  Cycle();
  EXPECT_FALSE(Job("notebook", "team-a")["status"].contains("idle"));
  // Quiet for the queue's hour: the job is stopped and its GPU freed.
  Apply(SharedNode(0));
  const int64_t quiet2 = now_ + 1000;
  Cycle();
  now_ = quiet2 + 60 * kMin - 1000;
  Cycle();
  job = Job("notebook", "team-a");
  EXPECT_EQ(job["status"]["phase"], "Failed") << job.dump();
  EXPECT_EQ(job["status"]["message"].get<std::string>().rfind("reclaimed by queue research", 0), 0u)
      << job.dump();
  EXPECT_NE(job["status"]["message"].get<std::string>().find("(idleReclaim.after 1h)"),
            std::string::npos)
      << job.dump();
  EXPECT_EQ(Events("notebook", "team-a").back().rfind("IdleReclaimed: ", 0), 0u);
  // Its wasted time: two idle stretches, 30 and 60 minutes of half a GPU.
  Cycle();
  const json usage = Get("/apis/tessera.io/v1/usage?by=job");
  ASSERT_EQ(usage["items"].size(), 1u);
  EXPECT_NEAR(usage["items"][0]["idleGpuHours"].get<double>(), 0.75, 0.001) << usage.dump();
}

TEST_F(LoopTest, AQueueAboveTheReclaimPriorityKeepsItsIdleJobs) {
  Apply(SharedNode(0));
  Apply(R"(
apiVersion: tessera.io/v1
kind: Queue
metadata: {name: prod}
spec:
  idleReclaim: {after: 10m, maxPriority: -1}
---
apiVersion: tessera.io/v1
kind: LocalQueue
metadata: {name: default, namespace: team-a}
spec: {clusterQueue: prod}
---
apiVersion: tessera.io/v1
kind: Job
metadata: {name: serve, namespace: team-a}
spec:
  queue: default
  tasks: [{name: api, resources: {limits: {tessera.io/gpu-milli: 500}}}]
)");
  ASSERT_EQ(Cycle().admitted, 1);
  Cycle();  // idle from here
  now_ += 3 * 3'600'000;
  Cycle();
  const json job = Job("serve", "team-a");
  EXPECT_EQ(job["status"]["phase"], "Admitted");
  EXPECT_TRUE(job["status"].contains("idle"));
}

TEST(Deploy, GrafanaDashboardIsValidJsonWithQueries) {
  std::ifstream in(std::string(TESSERA_SOURCE_DIR) + "/deploy/grafana/tessera-dashboard.json");
  std::stringstream text;
  text << in.rdbuf();
  const json d = json::parse(text.str(), nullptr, false);
  ASSERT_TRUE(d.is_object());
  ASSERT_GE(d["panels"].size(), 10u);
  for (const json& p : d["panels"]) {
    ASSERT_FALSE(p["targets"].empty()) << p.dump();
    EXPECT_FALSE(p["targets"][0]["expr"].get<std::string>().empty()) << p.dump();
  }
}

}  // namespace
}  // namespace tessera::server

namespace tessera::server {
namespace {

// Kueue's documentation (concepts/cohort): "Cohorts are created implicitly when a ClusterQueue
// references them"; a ClusterQueue without nominal quota borrows its cohort mates' unused quota.
TEST_F(LoopTest, ACohortNamedByClusterQueuesExistsWithoutACohortObject) {
  Apply(kCluster);
  Apply(R"(
apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata: {name: a100}
spec: {nodeLabels: {pool: a100}}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: lender}
spec:
  namespaceSelector: {}
  cohort: shared
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors: [{name: a100, resources: [{name: nvidia.com/gpu, nominalQuota: 8}]}]
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: borrower}
spec:
  namespaceSelector: {}
  cohort: shared
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors: [{name: a100, resources: [{name: nvidia.com/gpu, nominalQuota: 0}]}]
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {name: main, namespace: default}
spec: {clusterQueue: borrower}
---
apiVersion: v1
kind: Pod
metadata: {name: borrows, labels: {kueue.x-k8s.io/queue-name: main}}
spec:
  containers: [{name: c, resources: {limits: {nvidia.com/gpu: 4}}}]
)");
  const CycleSummary s = Cycle();
  EXPECT_EQ(s.inactive_queues, 0);
  EXPECT_EQ(Job("borrows")["status"]["phase"], "Admitted") << Job("borrows").dump();
}

TEST_F(LoopTest, SuspendIsTheQueuesSwitchForQueuedJobsAndKubernetesOtherwise) {
  Apply(kCluster);
  ApplyKueueQueue(8);
  Apply(R"(
apiVersion: batch/v1
kind: Job
metadata: {name: queued, labels: {kueue.x-k8s.io/queue-name: main}}
spec:
  suspend: true
  template:
    spec:
      containers: [{name: c, resources: {limits: {nvidia.com/gpu: 1}}}]
---
apiVersion: batch/v1
kind: Job
metadata: {name: plain}
spec:
  suspend: true
  template:
    spec:
      containers: [{name: c, resources: {limits: {nvidia.com/gpu: 1}}}]
)");
  Cycle();
  // Kueue's submission form: admission un-suspends the Job.
  EXPECT_EQ(Job("queued")["status"]["phase"], "Admitted") << Job("queued").dump();
  EXPECT_EQ(Job("queued")["spec"]["suspend"], false);
  // Without a queue, Kubernetes' meaning: nothing runs, and the Job says why.
  EXPECT_EQ(Job("plain")["status"]["phase"], "Pending");
  EXPECT_EQ(Job("plain")["status"]["message"],
            "suspended (spec.suspend is true): nothing runs until it is false");
  ASSERT_FALSE(Events("plain").empty());
  EXPECT_NE(Events("plain").back().find("suspended"), std::string::npos);
  // Resumed, it runs; suspended while running, it stops and gives its GPU back.
  auto set_suspend = [&](bool on) {
    json plain = Job("plain");
    plain["spec"]["suspend"] = on;
    plain["metadata"].erase("resourceVersion");
    Put(plain);
  };
  set_suspend(false);
  Cycle();
  EXPECT_EQ(Job("plain")["status"]["phase"], "Admitted") << Job("plain").dump();
  set_suspend(true);
  Cycle();
  EXPECT_EQ(Job("plain")["status"]["phase"], "Pending");
  EXPECT_TRUE(Job("plain")["status"]["pods"].is_null());
}

TEST_F(LoopTest, VolcanosDefaultQueueAlwaysExists) {
  Apply(kCluster);
  Apply(R"(
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: vc}
spec:
  minAvailable: 2
  schedulerName: volcano
  queue: default
  tasks:
  - replicas: 2
    name: worker
    template:
      spec:
        containers: [{name: c, image: busybox, resources: {limits: {nvidia.com/gpu: 1}}}]
)");
  Cycle();
  EXPECT_EQ(Job("vc")["status"]["phase"], "Admitted") << Job("vc").dump();
}

// kube-scheduler's default preemption for Pods outside queues: a Pod of a higher priority
// class preempts a lower one on gpu-a; a class with preemptionPolicy: Never waits instead.
TEST_F(LoopTest, PlainPodsPreemptByPriorityClassAsKubeSchedulerDoes) {
  Apply(kCluster);
  Apply(kLowAndHighPriority);
  Apply(R"(
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: polite}
value: 500
preemptionPolicy: Never
)");
  Apply(kBatchPod);
  Cycle();
  ASSERT_EQ(Job("batch")["status"]["phase"], "Admitted") << Job("batch").dump();
  Apply(R"(
apiVersion: v1
kind: Pod
metadata: {name: polite}
spec:
  priorityClassName: polite
  nodeSelector: {kubernetes.io/hostname: gpu-a}
  containers: [{name: c, command: ["true"], resources: {limits: {nvidia.com/gpu: 4}}}]
)");
  EXPECT_EQ(Cycle().preempted, 0);
  EXPECT_EQ(Job("batch")["status"]["phase"], "Admitted");
  Apply(kUrgentPod);
  EXPECT_EQ(Cycle().preempted, 1);
  EXPECT_EQ(Job("batch")["status"]["phase"], "Pending");
  const std::string last = Events("batch", "default").back();
  EXPECT_EQ(last.rfind("Preempted: preempted by default/urgent (priority 1000)", 0), 0u) << last;
  EXPECT_NE(last.find("[PreemptionByScheduler]"), std::string::npos) << last;
  Cycle();
  EXPECT_EQ(Job("urgent")["status"]["phase"], "Admitted") << Job("urgent").dump();
}

// What a Pod spec says that Tessera does not act on is accepted with a warning: in the apply
// reply (body and Kubernetes' Warning headers) and as a Warning event on the object.
TEST_F(LoopTest, FieldsNotActedOnAreWarnedInTheReplyAndAnEvent) {
  Apply(kCluster);
  const HttpResponse out = Apply(R"(
apiVersion: v1
kind: Pod
metadata: {name: svc}
spec:
  serviceAccountName: trainer
  containers:
  - name: c
    command: ["true"]
    readinessProbe: {httpGet: {path: /, port: 80}}
)");
  const json body = json::parse(out.body);
  ASSERT_EQ(body["warnings"].size(), 2u) << out.body;
  EXPECT_EQ(
      body["warnings"][0].get<std::string>().rfind("Job default/svc: spec.serviceAccountName: "
                                                   "not acted on",
                                                   0),
      0u)
      << body["warnings"][0];
  ASSERT_EQ(out.headers.size(), 2u);
  EXPECT_EQ(out.headers[1].first, "Warning");
  EXPECT_EQ(
      out.headers[1].second.rfind("299 - \"Job default/svc: spec.containers[0].readinessProbe", 0),
      0u)
      << out.headers[1].second;
  const std::vector<std::string> events = Events("svc");
  ASSERT_EQ(events.size(), 1u);
  EXPECT_NE(events[0].find("NotActedOn: spec.serviceAccountName: not acted on"), std::string::npos)
      << events[0];
  EXPECT_NE(events[0].find("; spec.containers[0].readinessProbe: not acted on"), std::string::npos)
      << events[0];
}

// Kubernetes refuses changes to a running Job's pod template ("field is immutable"); so does
// Tessera while the job has pods placed. Suspended, it can change, and runs as changed.
TEST_F(LoopTest, APlacedJobsTasksAreImmutableUntilItIsSuspended) {
  Apply(kCluster);
  Apply(R"(
apiVersion: batch/v1
kind: Job
metadata: {name: train}
spec:
  template:
    spec:
      containers: [{name: c, command: ["true"], resources: {limits: {nvidia.com/gpu: 2}}}]
)");
  Cycle();
  ASSERT_EQ(Job("train")["status"]["phase"], "Admitted");
  json changed = Job("train");
  changed["spec"]["tasks"][0]["resources"]["limits"]["nvidia.com/gpu"] = 4;
  const HttpResponse refused = Put(changed, 400);
  EXPECT_NE(refused.body.find("spec.tasks[0].resources: field is immutable"), std::string::npos)
      << refused.body;
  // The same through apply.
  const HttpResponse again = Apply(R"(
apiVersion: batch/v1
kind: Job
metadata: {name: train}
spec:
  template:
    spec:
      containers: [{name: c, command: ["true"], resources: {limits: {nvidia.com/gpu: 4}}}]
)",
                                   400);
  EXPECT_NE(again.body.find("field is immutable"), std::string::npos) << again.body;
  json suspended = Job("train");
  suspended["spec"]["suspend"] = true;
  Put(suspended);
  Cycle();
  ASSERT_EQ(Job("train")["status"]["phase"], "Pending");
  changed = Job("train");
  changed["spec"]["tasks"][0]["resources"]["limits"]["nvidia.com/gpu"] = 4;
  changed["spec"]["suspend"] = false;
  Put(changed);
  Cycle();
  const json job = Job("train");
  ASSERT_EQ(job["status"]["phase"], "Admitted") << job.dump();
  EXPECT_EQ(job["status"]["pods"][0]["devices"].size(), 4u);
}

// Kubernetes' schedulingGates: a gated pod waits, saying for which gates, until they are gone.
TEST_F(LoopTest, SchedulingGatesHoldAJobUntilRemoved) {
  Apply(kCluster);
  Apply(R"(
apiVersion: v1
kind: Pod
metadata: {name: gated}
spec:
  schedulingGates: [{name: example.com/quota-check}]
  containers: [{name: c, command: ["true"], resources: {limits: {nvidia.com/gpu: 1}}}]
)");
  Cycle();
  json job = Job("gated");
  EXPECT_EQ(job["status"]["phase"], "Pending");
  EXPECT_EQ(job["status"]["message"],
            "waiting for its scheduling gates to be removed (example.com/quota-check)");
  job["spec"].erase("schedulingGates");
  Put(job);
  Cycle();
  EXPECT_EQ(Job("gated")["status"]["phase"], "Admitted");
}

// A GpuSharingConfig no card could take is refused at apply with the valid choices; one that
// does not suit the cards it reaches is reported in its status and a Warning event, and those
// cards stay exclusive.
TEST_F(LoopTest, InvalidSharingConfigsAreRefusedOrReported) {
  Apply(kCluster);
  HttpResponse out = Apply(R"(
apiVersion: tessera.io/v1
kind: GpuSharingConfig
metadata: {name: bad}
spec: {gpus: ["0"], mig: {layout: {9g.99gb: 1}}}
)",
                           400);
  EXPECT_NE(out.body.find("spec.mig.layout.9g.99gb: no MIG-capable GPU has profile"),
            std::string::npos)
      << out.body;
  EXPECT_NE(out.body.find("1g.10gb"), std::string::npos) << out.body;
  out = Apply(R"(
apiVersion: tessera.io/v1
kind: GpuSharingConfig
metadata: {name: bad}
spec: {gpus: ["0"], mig: {layout: {7g.80gb: 2}}}
)",
              400);
  EXPECT_NE(out.body.find("spec.mig.layout: fits no MIG-capable GPU"), std::string::npos)
      << out.body;
  // 1g.5gb is an A100-40GB profile: gpu-a's cards are A100-80GB.
  Apply(R"(
apiVersion: tessera.io/v1
kind: GpuSharingConfig
metadata: {name: a0-mig}
spec: {nodeSelector: {kubernetes.io/hostname: gpu-a}, gpus: ["0"], mig: {layout: {1g.5gb: 7}}}
)");
  Cycle();
  const json cfg = Get("/apis/tessera.io/v1/gpusharingconfigs/a0-mig");
  EXPECT_EQ(cfg["status"]["phase"], "Invalid") << cfg.dump();
  ASSERT_EQ(cfg["status"]["problems"].size(), 1u) << cfg.dump();
  EXPECT_EQ(
      cfg["status"]["problems"][0].get<std::string>().rfind("node gpu-a GPU 0 (A100-80GB): ", 0),
      0u)
      << cfg.dump();
  const std::vector<std::string> events = Events("a0-mig", "tessera-system");
  ASSERT_EQ(events.size(), 1u);
  EXPECT_EQ(events[0].rfind("InvalidSharingConfig: node gpu-a GPU 0", 0), 0u) << events[0];
  Cycle();
  EXPECT_EQ(Events("a0-mig", "tessera-system").size(), 1u);  // once per change
  EXPECT_EQ(Get("/apis/tessera.io/v1/gpusharingconfigs/b7-shared")["status"]["phase"], "Applied");
}

// ResourceFlavors on-a and on-b, one per node of kCluster (its hostname label).
constexpr char kHostFlavors[] = R"(
apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata: {name: on-a}
spec: {nodeLabels: {kubernetes.io/hostname: gpu-a}}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata: {name: on-b}
spec: {nodeLabels: {kubernetes.io/hostname: gpu-b}}
---
)";

// Kueue's flavors per pod set through the server: a PyTorchJob's workers fill flavor on-a's
// quota and its master goes to on-b; the Job's status records each pod set's flavor, the
// Workload view shows one assignment per pod set with its own usage, and the ClusterQueue's
// flavorsUsage counts each pod set in its flavor.
TEST_F(LoopTest, KueueFlavorsPerPodSet) {
  Apply(kCluster);
  Apply(std::string(kHostFlavors) + R"(
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: cq}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors:
    - {name: on-a, resources: [{name: nvidia.com/gpu, nominalQuota: 4}]}
    - {name: on-b, resources: [{name: nvidia.com/gpu, nominalQuota: 4}]}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {name: main, namespace: default}
spec: {clusterQueue: cq}
---
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: pt, labels: {kueue.x-k8s.io/queue-name: main}}
spec:
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      template:
        spec:
          containers: [{name: pytorch, command: ["true"], resources: {limits: {nvidia.com/gpu: 2}}}]
    Worker:
      replicas: 2
      template:
        spec:
          containers: [{name: pytorch, command: ["true"], resources: {limits: {nvidia.com/gpu: 2}}}]
)");
  Cycle();
  const json job = Job("pt");
  ASSERT_EQ(job["status"]["phase"], "Admitted") << job.dump();
  // The master (2 GPUs) takes on-a first; the workers (4 GPUs) no longer fit its quota of 4.
  EXPECT_EQ(job["status"]["podSetFlavors"],
            json::parse(R"([{"nvidia.com/gpu": "on-a"}, {"nvidia.com/gpu": "on-b"}])"))
      << job["status"].dump();
  EXPECT_EQ(job["status"]["pods"][0]["node"], "gpu-a");
  EXPECT_EQ(job["status"]["pods"][1]["node"], "gpu-b");
  EXPECT_EQ(job["status"]["pods"][2]["node"], "gpu-b");
  const json wl = Get("/apis/kueue.x-k8s.io/v1beta1/namespaces/default/workloads/pytorchjob-pt");
  const json& sets = wl["status"]["admission"]["podSetAssignments"];
  ASSERT_EQ(sets.size(), 2u) << wl.dump();
  EXPECT_EQ(sets[0]["flavors"]["nvidia.com/gpu"], "on-a");
  EXPECT_EQ(sets[0]["resourceUsage"]["nvidia.com/gpu"], "2");
  EXPECT_EQ(sets[1]["flavors"]["nvidia.com/gpu"], "on-b");
  EXPECT_EQ(sets[1]["resourceUsage"]["nvidia.com/gpu"], "4");
  const json cq = Get("/apis/kueue.x-k8s.io/v1beta1/clusterqueues/cq");
  EXPECT_EQ(cq["status"]["flavorsUsage"],
            json::parse(R"([{"name": "on-a", "resources": [{"name": "nvidia.com/gpu",
                "total": "2"}]}, {"name": "on-b", "resources": [{"name": "nvidia.com/gpu",
                "total": "4"}]}])"))
      << cq.dump();
  // The next cycle reads the flavors back: on-a has 2 of 4 left, on-b none; a 2-GPU job fits
  // on-a, a second one nowhere.
  auto batch_job = [](const std::string& name) {
    return "apiVersion: batch/v1\nkind: Job\nmetadata: {name: " + name +
           ", labels: {kueue.x-k8s.io/queue-name: main}}\nspec:\n  template:\n    spec:\n"
           "      containers: [{name: c, command: [\"true\"], resources: {limits: "
           "{nvidia.com/gpu: 2}}}]\n";
  };
  Apply(batch_job("two") + "---\n" + batch_job("three"));
  Cycle();
  // Equal creation times: the lower name goes first.
  const json three = Job("three");
  EXPECT_EQ(three["status"]["phase"], "Admitted") << three.dump();
  EXPECT_EQ(three["status"]["flavors"]["nvidia.com/gpu"], "on-a");
  EXPECT_FALSE(three["status"].contains("podSetFlavors"));
  EXPECT_EQ(Job("two")["status"]["phase"], "Pending") << Job("two").dump();
}

// Kueue's flavorFungibility.whenCanBorrow, ResourceFlavor nodeTaints and ClusterQueue
// stopPolicy, as Kueue's documentation describes them.
TEST_F(LoopTest, KueueFungibilityFlavorTaintsAndStopPolicy) {
  Apply(kCluster);
  std::string yaml = std::string(kHostFlavors) + R"(
apiVersion: kueue.x-k8s.io/v1beta1
kind: ResourceFlavor
metadata: {name: dedicated}
spec:
  nodeLabels: {kubernetes.io/hostname: gpu-b}
  nodeTaints: [{key: dedicated, value: ml, effect: NoSchedule}]
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: lender}
spec:
  namespaceSelector: {}
  cohort: c
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors:
    - {name: on-a, resources: [{name: nvidia.com/gpu, nominalQuota: 8}]}
    - {name: on-b, resources: [{name: nvidia.com/gpu, nominalQuota: 0}]}
)";
  for (const char* q : {"borrow", "try-next"}) {
    yaml += std::string(R"(---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: )") +
            q + R"(}
spec:
  namespaceSelector: {}
  cohort: c
)" + (std::string(q) == "try-next" ? "  flavorFungibility: {whenCanBorrow: TryNextFlavor}\n" : "") +
            R"(  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors:
    - {name: on-a, resources: [{name: nvidia.com/gpu, nominalQuota: 0}]}
    - {name: on-b, resources: [{name: nvidia.com/gpu, nominalQuota: 2}]}
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {name: )" +
            q + R"(, namespace: default}
spec: {clusterQueue: )" +
            q + R"(}
---
apiVersion: batch/v1
kind: Job
metadata: {name: job-)" +
            q + R"(, labels: {kueue.x-k8s.io/queue-name: )" + q + R"(}}
spec:
  template:
    spec:
      containers: [{name: c, command: ["true"], resources: {limits: {nvidia.com/gpu: 1}}}]
)";
  }
  yaml += R"(---
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: tainted}
spec:
  namespaceSelector: {}
  resourceGroups:
  - coveredResources: [nvidia.com/gpu]
    flavors: [{name: dedicated, resources: [{name: nvidia.com/gpu, nominalQuota: 2}]}]
---
apiVersion: kueue.x-k8s.io/v1beta1
kind: LocalQueue
metadata: {name: tainted, namespace: default}
spec: {clusterQueue: tainted}
---
apiVersion: batch/v1
kind: Job
metadata: {name: intolerant, labels: {kueue.x-k8s.io/queue-name: tainted}}
spec:
  template:
    spec:
      containers: [{name: c, command: ["true"], resources: {limits: {nvidia.com/gpu: 1}}}]
---
apiVersion: batch/v1
kind: Job
metadata: {name: tolerant, labels: {kueue.x-k8s.io/queue-name: tainted}}
spec:
  template:
    spec:
      tolerations: [{key: dedicated, operator: Equal, value: ml, effect: NoSchedule}]
      containers: [{name: c, command: ["true"], resources: {limits: {nvidia.com/gpu: 1}}}]
)";
  Apply(yaml);
  Cycle();
  // Borrow (the default) takes the first flavor, borrowing; TryNextFlavor the next one that
  // fits within the queue's own quota.
  EXPECT_EQ(Job("job-borrow")["status"]["flavors"]["nvidia.com/gpu"], "on-a")
      << Job("job-borrow").dump();
  EXPECT_EQ(Job("job-try-next")["status"]["flavors"]["nvidia.com/gpu"], "on-b")
      << Job("job-try-next").dump();
  // A flavor's nodeTaints admit only work that tolerates them.
  EXPECT_EQ(Job("tolerant")["status"]["phase"], "Admitted") << Job("tolerant").dump();
  EXPECT_EQ(Job("intolerant")["status"]["phase"], "Pending");
  EXPECT_NE(Job("intolerant")["status"]["message"].get<std::string>().find("nodeTaints"),
            std::string::npos)
      << Job("intolerant").dump();

  // stopPolicy: Hold admits nothing new and keeps what runs; HoldAndDrain evicts it too.
  auto stop = [&](const char* policy) {
    json q = Get("/apis/tessera.io/v1/queues/tainted");
    q["spec"]["stopPolicy"] = policy;
    q["metadata"].erase("resourceVersion");
    HttpRequest r;
    r.method = "PUT";
    r.path = "/apis/tessera.io/v1/queues/tainted";
    r.authorization = "Bearer " + admin_;
    r.content_type = "application/json";
    r.body = q.dump();
    ASSERT_EQ(api_->Handle(r).status, 200);
  };
  stop("Hold");
  Apply(R"(
apiVersion: batch/v1
kind: Job
metadata: {name: late, labels: {kueue.x-k8s.io/queue-name: tainted}}
spec:
  template:
    spec:
      tolerations: [{key: dedicated, operator: Exists}]
      containers: [{name: c, command: ["true"], resources: {limits: {nvidia.com/gpu: 1}}}]
)");
  Cycle();
  EXPECT_EQ(Job("late")["status"]["message"],
            "queue tainted is stopped (stopPolicy Hold): it admits nothing until the policy is "
            "None");
  EXPECT_EQ(Job("tolerant")["status"]["phase"], "Admitted");
  stop("HoldAndDrain");
  Cycle();
  const json drained = Job("tolerant");
  EXPECT_EQ(drained["status"]["phase"], "Pending") << drained.dump();
  EXPECT_EQ(drained["status"]["conditions"][0]["reason"], "ClusterQueueStopped") << drained.dump();
  EXPECT_EQ(Events("tolerant").back().rfind("Evicted: evicted: queue tainted is stopped", 0), 0u)
      << Events("tolerant").back();
}

// Volcano's minAvailable below replicas: the job starts with minAvailable members; the others
// start as room appears, and say why they wait meanwhile.
TEST_F(LoopTest, MembersBeyondMinAvailableStartAsRoomAppears) {
  Apply(kCluster);
  Apply(R"(
apiVersion: v1
kind: Pod
metadata: {name: blocker}
spec:
  nodeSelector: {kubernetes.io/hostname: gpu-a}
  containers: [{name: c, command: ["true"], resources: {limits: {nvidia.com/gpu: 4}}}]
)");
  Cycle();
  ASSERT_EQ(Job("blocker")["status"]["phase"], "Admitted");
  Apply(R"(
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: elastic}
spec:
  minAvailable: 2
  schedulerName: volcano
  tasks:
  - replicas: 4
    name: worker
    template:
      spec:
        nodeSelector: {kubernetes.io/hostname: gpu-a}
        containers: [{name: c, command: ["true"], resources: {limits: {nvidia.com/gpu: 2}}}]
)");
  Cycle();
  json job = Job("elastic");
  ASSERT_EQ(job["status"]["phase"], "Admitted") << job.dump();
  int placed = 0;
  for (const json& p : job["status"]["pods"]) placed += p.is_object() ? 1 : 0;
  EXPECT_EQ(placed, 2);
  Cycle();
  job = Job("elastic");
  // The two waiting pods wait for one reason: one entry stands for both.
  ASSERT_EQ(job["status"]["waitingPods"].size(), 1u) << job.dump();
  EXPECT_EQ(job["status"]["waitingPods"][0]["name"], "worker-2") << job.dump();
  EXPECT_EQ(job["status"]["waitingPods"][0]["count"], 2) << job.dump();
  EXPECT_NE(job["status"]["waitingPods"][0]["reason"].get<std::string>().find("insufficient"),
            std::string::npos)
      << job.dump();
  {
    // Each of them shows it as a Pod, as kubectl sees it; the placed ones do not.
    HttpRequest get;
    get.method = "GET";
    get.path = "/api/v1/namespaces/default/pods";
    get.authorization = "Bearer " + admin_;
    const HttpResponse pods = api_->Handle(get);
    ASSERT_EQ(pods.status, 200) << pods.body;
    std::map<std::string, std::string> scheduled;  // pod -> its PodScheduled message
    const json list = json::parse(pods.body);
    for (const json& pod : list["items"]) {
      for (const json& c : pod["status"]["conditions"]) {
        if (c["type"] == "PodScheduled") {
          scheduled[pod["metadata"]["name"].get<std::string>()] = c.value("message", "");
        }
      }
    }
    for (const char* name : {"elastic-worker-2", "elastic-worker-3"}) {
      EXPECT_NE(scheduled[name].find("insufficient"), std::string::npos) << name;
    }
    for (const char* name : {"elastic-worker-0", "elastic-worker-1"}) {
      EXPECT_EQ(scheduled[name], "") << name;
    }
  }

  HttpRequest r;
  r.method = "DELETE";
  r.path = "/apis/tessera.io/v1/namespaces/default/jobs/blocker";
  r.authorization = "Bearer " + admin_;
  ASSERT_EQ(api_->Handle(r).status, 200);
  Cycle();
  job = Job("elastic");
  placed = 0;
  for (const json& p : job["status"]["pods"]) placed += p.is_object() ? 1 : 0;
  EXPECT_EQ(placed, 4) << job.dump();
  EXPECT_FALSE(job["status"].contains("waitingPods")) << job.dump();
  std::set<std::string> gpus;
  for (const json& p : job["status"]["pods"]) {
    for (const json& d : p["devices"]) gpus.insert(d["uuid"].get<std::string>());
  }
  EXPECT_EQ(gpus.size(), 8u);  // no card given twice
  EXPECT_EQ(Events("elastic").back().rfind("Scheduled: Scheduled worker-", 0), 0u)
      << Events("elastic").back();
}

// A Volcano Queue is a queue every namespace may name: its capability caps what its jobs hold.
TEST_F(LoopTest, VolcanoQueuesCapTheirJobsAndAreOpenToEveryNamespace) {
  Apply(kCluster);
  const HttpResponse out = Apply(R"(
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: research}
spec:
  weight: 2
  reclaimable: false
  capability: {nvidia.com/gpu: 4, pods: 100}
)");
  const json body = json::parse(out.body);
  ASSERT_EQ(body["warnings"].size(), 1u) << out.body;
  EXPECT_NE(body["warnings"][0].get<std::string>().find("spec.capability.pods: not acted on"),
            std::string::npos);
  const json queue = Get("/apis/tessera.io/v1/queues/research");
  EXPECT_EQ(queue["spec"]["cohort"], "volcano");
  EXPECT_EQ(queue["spec"]["reclaimable"], false);
  EXPECT_EQ(queue["spec"]["fairSharing"]["weight"], 2);
  for (const char* ns : {"team-a", "team-b"}) {
    Apply(std::string(R"(
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: vc, namespace: )") +
          ns + R"(}
spec:
  minAvailable: 2
  schedulerName: volcano
  queue: research
  tasks:
  - replicas: 2
    name: worker
    template:
      spec:
        containers: [{name: c, command: ["true"], resources: {limits: {nvidia.com/gpu: 2}}}]
)");
  }
  Cycle();
  const json a = Job("vc", "team-a");
  const json b = Job("vc", "team-b");
  EXPECT_EQ(a["status"]["phase"], "Admitted") << a.dump();
  EXPECT_EQ(a["status"]["queue"], "research");
  // The queue's capability (4 GPUs) is taken by the first job.
  EXPECT_EQ(b["status"]["phase"], "Pending") << b.dump();
  EXPECT_NE(b["status"]["message"].get<std::string>().find("queue research"), std::string::npos)
      << b.dump();
}

// Ported from Volcano's reclaim action test (volcano-sh/volcano,
// pkg/scheduler/actions/reclaim/reclaim_test.go, "Two Queue with one Queue overusing resource,
// should reclaim"): queues q1 and q2 of weight 1 share a 3-CPU node; q1 runs three 1-CPU pods;
// a pod of q2 reclaims one. As Volcano's proportion plugin, this needs fair sharing.
TEST_F(LoopTest, VolcanoReclaimFromAQueueOverItsShare) {
  SchedulingLoopOptions options;
  options.cycle.fair_sharing = true;
  loop_ = SchedulingLoop::Create(*plane_, options).value();
  std::string yaml = R"(
apiVersion: tessera.io/v1
kind: Node
metadata: {name: n1}
status:
  allocatable: {cpu: "3", memory: 3Gi}
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: low-priority}
value: 10
---
apiVersion: scheduling.k8s.io/v1
kind: PriorityClass
metadata: {name: high-priority}
value: 100000
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: q1}
spec: {weight: 1}
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: q2}
spec: {weight: 1}
)";
  for (const char* name : {"preemptee1", "preemptee2", "preemptee3"}) {
    yaml += std::string(R"(---
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: )") +
            name + R"(, namespace: c1}
spec:
  queue: q1
  priorityClassName: low-priority
  tasks:
  - replicas: 1
    name: t
    template: {spec: {containers: [{name: c, command: ["true"], resources: {requests: {cpu: "1", memory: 1G}}}]}}
)";
  }
  Apply(yaml);
  Cycle();
  for (const char* name : {"preemptee1", "preemptee2", "preemptee3"}) {
    ASSERT_EQ(Job(name, "c1")["status"]["phase"], "Admitted") << Job(name, "c1").dump();
  }
  Apply(R"(
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: preemptor1, namespace: c1}
spec:
  queue: q2
  priorityClassName: high-priority
  tasks:
  - replicas: 1
    name: t
    template: {spec: {containers: [{name: c, command: ["true"], resources: {requests: {cpu: "1", memory: 1G}}}]}}
)");
  EXPECT_EQ(Cycle().preempted, 1);
}

}  // namespace
}  // namespace tessera::server

namespace tessera::server {
namespace {

// Volcano's queue states (volcano-sh/volcano docs/design/queue/queue-state-management.md):
// bus.volcano.sh Commands open and close a Queue; a closed queue is Closing while PodGroups are
// in it and Closed after; a queue that is not Open refuses new work with the words of Volcano's
// admission webhooks and allocates nothing (the capacity plugin's AllocatableFn), while what
// runs goes on. Cases ported, each named by its Volcano source:
//   pkg/controllers/queue/state/open_test.go     CloseQueueAction with and without podgroups,
//                                                OpenQueueAction on an open queue
//   pkg/controllers/queue/state/closing_test.go  "SyncQueueAction: Spec state closing with no
//                                                podgroups" / "with podgroups",
//                                                "OpenQueueAction: Closing queue"
//   pkg/controllers/queue/state/closed_test.go   OpenQueueAction, CloseQueueAction on Closed
//   pkg/webhooks/admission/jobs/validate/admit_job_test.go  a job to a closed queue
//   pkg/webhooks/admission/pods/validate/admit_pod_test.go  "validate pod when volcano queue
//                                                is closed when no pg", "... is closed when pg",
//                                                "... is open when no pg"
//   pkg/webhooks/admission/podgroups/validate: a PodGroup to a closed queue
TEST_F(LoopTest, VolcanoQueueStatesFollowTheirCommands) {
  Apply(kCluster);
  Apply(R"(
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: research}
spec: {weight: 1}
---
apiVersion: scheduling.volcano.sh/v1beta1
kind: PodGroup
metadata: {name: gang, namespace: team-a}
spec: {minMember: 1, queue: research}
)");
  auto call = [&](const std::string& method, const std::string& path, const json& body) {
    HttpRequest r;
    r.method = method;
    r.path = path;
    r.authorization = "Bearer " + admin_;
    r.content_type = "application/json";
    r.body = body.is_null() ? "" : body.dump();
    return api_->Handle(r);
  };
  const std::string queue_path = "/apis/scheduling.volcano.sh/v1beta1/queues/research";
  auto state = [&] { return Get(queue_path)["status"]["state"]; };
  const std::string commands = "/apis/bus.volcano.sh/v1alpha1/namespaces/default/commands";
  auto command = [&](const std::string& action, const std::string& queue = "research") {
    return call("POST", commands,
                {{"apiVersion", "bus.volcano.sh/v1alpha1"},
                 {"kind", "Command"},
                 {"metadata", {{"generateName", queue + "-" + action + "-"}}},
                 {"action", action},
                 {"target",
                  {{"apiVersion", "scheduling.volcano.sh/v1beta1"},
                   {"kind", "Queue"},
                   {"name", queue},
                   {"controller", true}}}});
  };
  auto vcjob = [](const std::string& name, int gpus) {
    return R"(
apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: )" +
           name + R"(, namespace: team-a}
spec:
  minAvailable: 1
  schedulerName: volcano
  queue: research
  tasks:
  - replicas: 1
    name: worker
    template:
      spec:
        containers: [{name: c, command: ["true"], resources: {limits: {nvidia.com/gpu: )" +
           std::to_string(gpus) + "}}}]\n";
  };
  // A queue is Open when created; the gang's PodGroup counts as pending.
  EXPECT_EQ(state(), "Open");
  EXPECT_EQ(Get(queue_path)["status"]["pending"], 1) << Get(queue_path).dump();
  Apply(vcjob("running", 2));
  Cycle();
  ASSERT_EQ(Job("running", "team-a")["status"]["phase"], "Admitted");
  // open_test OpenQueueAction on an open queue: it stays Open, and nothing is written.
  const int64_t before = plane_->store().Revision();
  EXPECT_EQ(command("OpenQueue").status, 201);
  EXPECT_EQ(plane_->store().Revision(), before);

  // open_test CloseQueueAction with podgroups: Closing.
  const HttpResponse closed = command("CloseQueue");
  ASSERT_EQ(closed.status, 201) << closed.body;
  const json made = json::parse(closed.body);
  EXPECT_TRUE(made["metadata"]["name"].get<std::string>().starts_with("research-CloseQueue-"))
      << closed.body;
  EXPECT_EQ(made["metadata"]["name"].get<std::string>().size(),
            std::string("research-CloseQueue-").size() + 5);
  EXPECT_EQ(made["metadata"]["namespace"], "default");
  EXPECT_EQ(state(), "Closing");
  // The admitted job's PodGroup is Inqueue (no pod runs here: no agent).
  EXPECT_EQ(Get(queue_path)["status"]["inqueue"], 1) << Get(queue_path).dump();
  const json events = Get("/api/v1/namespaces/tessera-system/events");
  bool told = false;
  for (const json& e : events["items"]) {
    told = told || (e["reason"] == "CloseQueue" && e["message"] == "Close queue succeed" &&
                    e["involvedObject"]["name"] == "research");
  }
  EXPECT_TRUE(told) << events.dump();
  // Commands are carried out, not kept, as Volcano's controller deletes each it handled.
  EXPECT_EQ(Get(commands)["items"], json::array());

  // admit_job_test: a job to a queue that is not Open is refused, naming its state.
  HttpResponse refused = Apply(vcjob("late", 1), 400);
  EXPECT_NE(refused.body.find("can only submit job to queue with state `Open`, queue `research` "
                              "status is `Closing`"),
            std::string::npos)
      << refused.body;
  // admit_pod_test "validate pod when volcano queue is closed when no pg" and "... when pg".
  auto pod = [](const std::string& annotation) {
    return "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  namespace: team-a\n  "
           "annotations: {" +
           annotation + "}\nspec:\n  schedulerName: volcano\n  containers: [{name: c}]\n";
  };
  refused = Apply(pod("scheduling.volcano.sh/queue-name: research"), 400);
  EXPECT_NE(refused.body.find("queue `research` status is `Closing`"), std::string::npos)
      << refused.body;
  refused = Apply(pod("scheduling.k8s.io/group-name: gang"), 400);
  EXPECT_NE(refused.body.find("spec.podGroup: can only submit job to queue with state `Open`"),
            std::string::npos)
      << refused.body;
  // A PodGroup to a closed queue, as Volcano's PodGroup webhook refuses it.
  refused = Apply(R"(
apiVersion: scheduling.volcano.sh/v1beta1
kind: PodGroup
metadata: {name: gang2, namespace: team-a}
spec: {minMember: 1, queue: research}
)",
                  400);
  EXPECT_NE(refused.body.find("can only submit PodGroup to queue with state `Open`"),
            std::string::npos)
      << refused.body;

  // The queue's manifest applied again (a new weight) keeps its state, as Volcano keeps a
  // queue's status through spec updates.
  Apply(R"(
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: research}
spec: {weight: 3}
)");
  EXPECT_EQ(state(), "Closing");
  EXPECT_EQ(Get("/apis/tessera.io/v1/queues/research")["spec"]["fairSharing"]["weight"], 3);

  // What runs keeps running; nothing new is allocated: a job that was waiting in the queue
  // before it closed stays pending and says why.
  ASSERT_EQ(command("OpenQueue").status, 201);
  Apply(vcjob("waiting", 8));
  ASSERT_EQ(command("CloseQueue").status, 201);
  Cycle();
  EXPECT_EQ(Job("running", "team-a")["status"]["phase"], "Admitted");
  const json waiting = Job("waiting", "team-a");
  EXPECT_EQ(waiting["status"]["phase"], "Pending");
  EXPECT_NE(waiting["status"]["message"].get<std::string>().find(
                "queue research is not Open (closed by a CloseQueue command)"),
            std::string::npos)
      << waiting.dump();

  // closing_test "SyncQueueAction: Spec state closing with no podgroups": Closed once the
  // queue's PodGroups and Jobs are gone.
  DeleteJob("running", "team-a");
  DeleteJob("waiting", "team-a");
  EXPECT_EQ(state(), "Closing");
  EXPECT_EQ(
      call("DELETE", "/apis/scheduling.volcano.sh/v1beta1/namespaces/team-a/podgroups/gang", json())
          .status,
      200);
  EXPECT_EQ(state(), "Closed");
  // closed_test CloseQueueAction: stays Closed. OpenQueueAction: Open, and work is taken again
  // (admit_pod_test "validate pod when volcano queue is open when no pg").
  EXPECT_EQ(command("CloseQueue").status, 201);
  EXPECT_EQ(state(), "Closed");
  EXPECT_EQ(command("OpenQueue").status, 201);
  EXPECT_EQ(state(), "Open");
  Apply(vcjob("again", 1));
  Cycle();
  EXPECT_EQ(Job("again", "team-a")["status"]["phase"], "Admitted");

  // open_test CloseQueueAction without podgroups: Closed at once. One apply may create a queue
  // and close it.
  Apply(R"(
apiVersion: scheduling.volcano.sh/v1beta1
kind: Queue
metadata: {name: empty}
spec: {weight: 1}
---
apiVersion: bus.volcano.sh/v1alpha1
kind: Command
metadata: {name: close-empty}
action: CloseQueue
target: {apiVersion: scheduling.volcano.sh/v1beta1, kind: Queue, name: empty}
)");
  EXPECT_EQ(Get("/apis/scheduling.volcano.sh/v1beta1/queues/empty")["status"]["state"], "Closed");
}

// Commands that cannot be carried out are refused, naming the field.
TEST_F(LoopTest, VolcanoCommandsThatCannotBeCarriedOutAreRefused) {
  Apply(R"(
apiVersion: kueue.x-k8s.io/v1beta1
kind: ClusterQueue
metadata: {name: cq}
spec: {resourceGroups: []}
)");
  auto post = [&](const json& cmd) {
    HttpRequest r;
    r.method = "POST";
    r.path = "/apis/bus.volcano.sh/v1alpha1/namespaces/default/commands";
    r.authorization = "Bearer " + admin_;
    r.content_type = "application/json";
    r.body = cmd.dump();
    return api_->Handle(r);
  };
  const json base = json::parse(R"({"apiVersion": "bus.volcano.sh/v1alpha1", "kind": "Command",
      "metadata": {"name": "c"}, "action": "CloseQueue", "target": {"apiVersion":
      "scheduling.volcano.sh/v1beta1", "kind": "Queue", "name": "nowhere"}})");
  struct Case {
    const char* patch;
    int status;
    const char* says;
  };
  const Case cases[] = {
      {R"({})", 404, "queues.scheduling.volcano.sh \"nowhere\" not found"},
      {R"({"target": {"name": "cq"}})", 400, "queue cq is not a Volcano Queue"},
      {R"({"target": {"name": "default"}})", 400, "Volcano's default queue"},
      {R"({"action": "AbortJob"})", 400, "action: \"AbortJob\" is not carried out here"},
      {R"({"action": null})", 400, "action: must be set"},
      {R"({"target": {"kind": "Job"}})", 400, "target: must name a Queue"},
      {R"({"target": {"name": null}})", 400, "target.name: must be set"},
      {R"({"targt": {}})", 400, "targt: unknown field (did you mean \"target\"?)"},
      {R"({"metadata": {"name": null}})", 400, "metadata.name: must be set"},
  };
  for (const Case& c : cases) {
    json cmd = base;
    cmd.merge_patch(json::parse(c.patch));
    const HttpResponse r = post(cmd);
    EXPECT_EQ(r.status, c.status) << c.patch << ": " << r.body;
    EXPECT_NE(json::parse(r.body)["message"].get<std::string>().find(c.says), std::string::npos)
        << c.patch << ": " << r.body;
  }
  // Only the admin writes queues: a namespace token may not close one.
  HttpRequest t;
  t.method = "POST";
  t.path = "/apis/tessera.io/v1/tokens";
  t.authorization = "Bearer " + admin_;
  t.content_type = "application/json";
  t.body = R"({"namespace": "team-a"})";
  const HttpResponse token = api_->Handle(t);
  ASSERT_EQ(token.status, 201) << token.body;
  HttpRequest r;
  r.method = "POST";
  r.path = "/apis/bus.volcano.sh/v1alpha1/namespaces/team-a/commands";
  r.authorization = "Bearer " + json::parse(token.body)["token"].get<std::string>();
  r.content_type = "application/json";
  json to_cq = base;
  to_cq["target"]["name"] = "cq";
  r.body = to_cq.dump();
  EXPECT_EQ(api_->Handle(r).status, 403);
  // A command is carried out once: there is nothing to get, replace or delete after.
  EXPECT_EQ(Get("/apis/bus.volcano.sh/v1alpha1/namespaces/default/commands")["kind"],
            "CommandList");
}

// The loop's thread wakes on changes that can change what a cycle decides; an event or a new
// token does not wake it (it still runs once a period, here far off).
TEST_F(LoopTest, ChangesThatCannotChangeADecisionDoNotWakeTheLoop) {
  SchedulingLoopOptions options;
  options.period_ms = 600'000;
  loop_ = SchedulingLoop::Create(*plane_, options).value();
  loop_->Start();
  auto settled = [&] {
    // Until a cycle has run and no other follows for a while (a cycle follows its own writes).
    uint64_t seen = 0;
    for (int i = 0; i < 200 && (seen == 0 || seen != loop_->cycles()); ++i) {
      seen = loop_->cycles();
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
    }
    return loop_->cycles();
  };
  const uint64_t before = settled();
  ASSERT_GE(before, 1u);
  Apply(R"(
apiVersion: tessera.io/v1
kind: Event
metadata: {name: e1, namespace: tessera-system}
spec:
  type: Normal
  reason: Test
  message: nothing to decide
  involvedObject: {kind: Node, name: n1}
)");
  HttpRequest token;
  token.method = "POST";
  token.path = "/apis/tessera.io/v1/tokens";
  token.authorization = "Bearer " + admin_;
  token.content_type = "application/json";
  token.body = R"({"namespace": "team-a"})";
  ASSERT_EQ(api_->Handle(token).status, 201);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  EXPECT_EQ(loop_->cycles(), before);
  // A node is something to decide on: at once.
  ApplyNode("n1", 8);
  for (int i = 0; i < 200 && loop_->cycles() == before; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  EXPECT_GT(loop_->cycles(), before);
  loop_->Stop();
}

// The loop's thread does not wake for a cycle's own writes when they cannot let the next cycle
// decide more (an admission, pending reasons, events): a busy loop would otherwise run a cycle
// for nothing after each one. A cycle that preempted is followed at once: the next one admits
// the preemptor (the period, here far off, would be too late).
TEST_F(LoopTest, ACycleIsFollowedForItsOwnWritesOnlyWhenTheyLetTheNextDecideMore) {
  SchedulingLoopOptions options;
  options.period_ms = 600'000;
  loop_ = SchedulingLoop::Create(*plane_, options).value();
  Apply(kCluster);
  Apply(kLowAndHighPriority);
  loop_->Start();
  auto wait_for = [&](auto done) {
    for (int i = 0; i < 500 && !done(); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return done();
  };
  ASSERT_TRUE(wait_for([&] { return loop_->cycles() >= 1; }));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const uint64_t settled = loop_->cycles();
  Apply(kBatchPod);
  ASSERT_TRUE(wait_for([&] { return Job("batch")["status"]["phase"] == "Admitted"; }));
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  EXPECT_EQ(loop_->cycles(), settled + 1) << "one cycle for the new Job, none for its admission";
  Apply(kUrgentPod);
  EXPECT_TRUE(wait_for([&] { return Job("urgent")["status"]["phase"] == "Admitted"; }))
      << Job("urgent").dump();
  EXPECT_EQ(Job("batch")["status"]["phase"], "Pending");
  loop_->Stop();
}

// A waiting job's changed reason is rewritten (with an Event) within the refresh budget, the
// longest unrefreshed first; a job's first reason is written at once whatever the budget.
TEST_F(LoopTest, ChangedPendingReasonsAreRewrittenWithinTheRefreshBudget) {
  SchedulingLoopOptions opts;
  opts.pending_refresh_ms = 0;
  opts.pending_refreshes_per_s = 1;
  loop_ = SchedulingLoop::Create(*plane_, opts).value();
  ApplyNode("n1", 1);
  auto job = [](const std::string& name, int gpus) {
    return "apiVersion: tessera.io/v1\nkind: Job\nmetadata: {name: " + name +
           "}\nspec:\n  tasks: [{name: main, command: [\"true\"], resources: {limits: "
           "{nvidia.com/gpu: " +
           std::to_string(gpus) + "}}}]\n";
  };
  Apply(job("hold", 1));
  Cycle();
  ASSERT_EQ(Job("hold")["status"]["phase"], "Admitted");
  for (const char* name : {"w1", "w2", "w3"}) Apply(job(name, 1));
  // Three first reasons, each with its Event: six writes.
  EXPECT_EQ(Cycle().writes, 6);
  std::map<std::string, std::string> first;
  for (const char* name : {"w1", "w2", "w3"}) first[name] = Job(name)["status"]["message"];
  // A second node changes every waiting job's reason ("0/2 nodes ..."): one a second.
  ApplyNode("n2", 0);
  std::set<std::string> refreshed;
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(Cycle().writes, 2) << i;
    int changed = 0;
    for (const char* name : {"w1", "w2", "w3"}) {
      if (Job(name)["status"]["message"] != first[name]) {
        ++changed;
        refreshed.insert(name);
      }
    }
    EXPECT_EQ(changed, i + 1);
  }
  EXPECT_EQ(refreshed.size(), 3u);
  EXPECT_EQ(Cycle().writes, 0);  // nothing left to refresh
}

}  // namespace
}  // namespace tessera::server
