#include "api/manifest.h"
#include "api/yaml.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "api/fields.h"
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

// The device plugin's timeSlicing.resources[].devices: the listed GPUs (indices or UUIDs) are
// time-sliced and the node's others stay whole; "all" is every GPU. It was refused.
TEST(Manifest, TimeSlicingOfSomeDevicesPicksThoseGpus) {
  auto config = [](const std::string& devices) {
    return "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: dp, namespace: gpu-operator}\n"
           "data:\n  any: |-\n    version: v1\n    sharing:\n      timeSlicing:\n"
           "        resources:\n        - name: nvidia.com/gpu\n          replicas: 4\n" +
           devices;
  };
  auto objs =
      TranslateManifest(config("          devices: [0, \"2\", GPU-8f3c]\n"), "dp.yaml", "default");
  ASSERT_TRUE(objs.ok()) << objs.status().message();
  ASSERT_EQ(objs->size(), 1u);
  auto cfg = DecodeGpuSharingConfig((*objs)[0]);
  ASSERT_TRUE(cfg.ok()) << cfg.status().message();
  EXPECT_EQ(cfg->gpus, (std::vector<std::string>{"0", "2", "GPU-8f3c"}));
  EXPECT_EQ(cfg->sharing.replicas, 4);
  // "any" is the default config: it reaches every unlabeled node's GPUs, and a warning says so.
  std::vector<std::vector<std::string>> warnings;
  objs = TranslateManifest(config("          devices: all\n"), "dp.yaml", "default", &warnings);
  ASSERT_EQ(warnings.size(), 1u);
  ASSERT_EQ(warnings[0].size(), 1u);
  EXPECT_NE(warnings[0][0].find("data.any: applies to every GPU of every node without the label "
                                "nvidia.com/device-plugin.config"),
            std::string::npos)
      << warnings[0][0];
  ASSERT_TRUE(objs.ok()) << objs.status().message();
  cfg = DecodeGpuSharingConfig((*objs)[0]);
  ASSERT_TRUE(cfg.ok());
  EXPECT_TRUE(cfg->gpus.empty());
  objs = TranslateManifest(config("          devices: [\"0:1\"]\n"), "dp.yaml", "default");
  ASSERT_FALSE(objs.ok());
  EXPECT_NE(objs.status().message().find("resources[0].devices[0]"), std::string::npos)
      << objs.status().message();
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
  // minResources is not acted on (a gang's needs are its pods' requests): warned, not kept.
  EXPECT_EQ(pg->min_resources.gpu.count, 0);
  std::vector<std::vector<std::string>> warnings;
  ASSERT_TRUE(TranslateManifest(Seed("05-volcano-gang.yaml"), "05", "default", &warnings).ok());
  ASSERT_FALSE(warnings.empty());
  EXPECT_NE(::testing::PrintToString(warnings[0]).find("spec.minResources: not acted on"),
            std::string::npos)
      << ::testing::PrintToString(warnings);
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

TEST(Manifest, NamespaceKeepsItsLabelsAndWarnsOfOtherFinalizers) {
  std::vector<std::vector<std::string>> warnings;
  auto objs = TranslateManifest(R"(
apiVersion: v1
kind: Namespace
metadata:
  name: team-a
  labels: {tier: gold}
  namespace: ignored
spec: {finalizers: [kubernetes]}
---
apiVersion: v1
kind: Namespace
metadata: {name: team-b}
spec: {finalizers: [example.com/keep]}
)",
                                "inline", "default", &warnings);
  ASSERT_TRUE(objs.ok()) << objs.status().message();
  ASSERT_EQ(objs->size(), 2u);
  const json& ns = (*objs)[0];
  EXPECT_EQ(ns["kind"], "Namespace");
  EXPECT_EQ(ns["metadata"]["labels"]["tier"], "gold");
  EXPECT_FALSE(ns["metadata"].contains("namespace"));
  EXPECT_TRUE(ValidateSpec(ns).ok()) << ValidateSpec(ns).message();
  ASSERT_EQ(warnings.size(), 2u);
  EXPECT_TRUE(warnings[0].empty()) << warnings[0][0];
  ASSERT_EQ(warnings[1].size(), 1u);
  EXPECT_NE(warnings[1][0].find("spec.finalizers: not acted on"), std::string::npos);
  // A namespace's name is a DNS label.
  auto bad = TranslateManifest("apiVersion: v1\nkind: Namespace\nmetadata: {name: a.b}\n", "inline",
                               "default");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("metadata.name"), std::string::npos);
}

// Kubeflow's own example (training-operator examples/pytorch/simple.yaml), and an elastic job.
// The training operator's examples/tensorflow/dist-mnist/tf_job_mnist.yaml (kubeflow/
// training-operator), with a chief added.
TEST(Manifest, KubeflowTfJobGivesEveryPodTfConfigAndCompletesWithItsChief) {
  std::vector<std::vector<std::string>> warnings;
  auto objs = TranslateManifest(R"(
apiVersion: "kubeflow.org/v1"
kind: "TFJob"
metadata:
  name: "dist-mnist-for-e2e-test"
spec:
  tfReplicaSpecs:
    Chief:
      replicas: 1
      template:
        spec:
          containers:
            - name: tensorflow
              image: kubeflow/tf-dist-mnist-test:latest
    PS:
      replicas: 2
      restartPolicy: Never
      template:
        spec:
          containers:
            - name: tensorflow
              image: kubeflow/tf-dist-mnist-test:latest
    Worker:
      replicas: 4
      restartPolicy: Never
      template:
        spec:
          containers:
            - name: tensorflow
              image: kubeflow/tf-dist-mnist-test:latest
)",
                                "inline", "default", &warnings);
  ASSERT_TRUE(objs.ok()) << objs.status().message();
  const json& job = (*objs)[0];
  EXPECT_EQ(job["spec"]["tfConfig"], true);
  EXPECT_EQ(job["spec"]["completesWith"], "chief");
  EXPECT_EQ(job["spec"]["minMember"], 7);
  ASSERT_EQ(job["spec"]["tasks"].size(), 3u);
  EXPECT_EQ(job["spec"]["tasks"][0]["name"], "chief");
  EXPECT_EQ(job["spec"]["tasks"][1]["name"], "ps");
  EXPECT_EQ(job["spec"]["tasks"][2]["name"], "worker");
  ASSERT_TRUE(DecodeJob(job).ok()) << DecodeJob(job).status().message();
  // Without a chief: worker 0, or every worker with successPolicy AllWorkers.
  for (const auto& [policy, completes] : std::vector<std::pair<std::string, std::string>>{
           {"", "worker-0"}, {"successPolicy: AllWorkers\n  ", "worker"}}) {
    auto r = TranslateManifest(
        "apiVersion: kubeflow.org/v1\nkind: TFJob\nmetadata: {name: x}\n"
        "spec:\n  " +
            policy +
            "tfReplicaSpecs: {Worker: {replicas: 2, template: {spec: "
            "{containers: [{name: c, command: [x]}]}}}}\n",
        "inline", "default");
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_EQ((*r)[0]["spec"]["completesWith"], completes);
    EXPECT_TRUE(DecodeJob((*r)[0]).ok());
  }
  for (const auto& [body, field] : std::vector<std::pair<std::string, std::string>>{
           {"tfReplicaSpecs: {Launcher: {}}", "spec.tfReplicaSpecs.Launcher"},
           {"tfReplicaSpecs: {Chief: {replicas: 2}}", "spec.tfReplicaSpecs.Chief.replicas"},
           {"successPolicy: AnyWorker\n  tfReplicaSpecs: {Worker: {}}", "spec.successPolicy"}}) {
    auto r = TranslateManifest(
        "apiVersion: kubeflow.org/v1\nkind: TFJob\nmetadata: {name: x}\nspec:\n  " + body + "\n",
        "inline", "default");
    ASSERT_FALSE(r.ok()) << body;
    EXPECT_NE(r.status().message().find(field), std::string::npos) << r.status().message();
  }
  json bad = job;
  bad["spec"]["completesWith"] = "chief-1";
  EXPECT_NE(DecodeJob(bad).status().message().find("spec.completesWith"), std::string::npos);
}

// The MPI operator's examples/v2beta1/pi/pi.yaml (kubeflow/mpi-operator).
TEST(Manifest, KubeflowMpiJobIsOneGangOfLauncherAndWorkers) {
  std::vector<std::vector<std::string>> warnings;
  auto objs = TranslateManifest(R"(
apiVersion: kubeflow.org/v2beta1
kind: MPIJob
metadata:
  name: pi
spec:
  slotsPerWorker: 1
  runPolicy:
    cleanPodPolicy: Running
    ttlSecondsAfterFinished: 60
  sshAuthMountPath: /home/mpiuser/.ssh
  mpiReplicaSpecs:
    Launcher:
      replicas: 1
      template:
        spec:
          containers:
          - image: mpioperator/mpi-pi:openmpi
            name: mpi-launcher
            securityContext:
              runAsUser: 1000
            command:
            - mpirun
            args:
            - -n
            - "2"
            - /home/mpiuser/pi
            resources:
              limits:
                cpu: 1
                memory: 1Gi
    Worker:
      replicas: 2
      template:
        spec:
          containers:
          - image: mpioperator/mpi-pi:openmpi
            name: mpi-worker
            securityContext:
              runAsUser: 1000
            resources:
              limits:
                cpu: 1
                memory: 1Gi
)",
                                "inline", "default", &warnings);
  ASSERT_TRUE(objs.ok()) << objs.status().message();
  const json& job = (*objs)[0];
  EXPECT_EQ(job["spec"]["minMember"], 3);
  EXPECT_EQ(job["spec"]["mpi"], json({{"launcher", "launcher"}, {"slotsPerWorker", 1}}));
  ASSERT_EQ(job["spec"]["tasks"].size(), 2u);
  EXPECT_EQ(job["spec"]["tasks"][0]["name"], "launcher");
  EXPECT_EQ(job["spec"]["tasks"][0]["command"][0], "mpirun");
  EXPECT_EQ(job["spec"]["tasks"][1]["replicas"], 2);
  // A worker without a command waits for the launcher's ranks, as the operator's do.
  EXPECT_EQ(job["spec"]["tasks"][1]["command"], json({"sleep", "365d"}));
  EXPECT_EQ(job["spec"]["tasks"][1]["runAsUser"], 1000);
  ASSERT_TRUE(DecodeJob(job).ok()) << DecodeJob(job).status().message();
  std::string all;
  for (const auto& w : warnings) {
    for (const std::string& x : w) all += x + "\n";
  }
  EXPECT_EQ(job["spec"]["ttlSecondsAfterFinished"], 60);  // acted on: the Job goes 60 s after
  for (const char* field : {"spec.runPolicy.cleanPodPolicy", "spec.sshAuthMountPath"}) {
    EXPECT_NE(all.find(std::string(field) + ": not acted on"), std::string::npos) << all;
  }
  const std::string bad[][2] = {
      {"mpiReplicaSpecs: {Worker: {replicas: 1}}", "spec.mpiReplicaSpecs"},
      {"mpiReplicaSpecs: {Launcher: {replicas: 2}, Worker: {replicas: 1}}",
       "spec.mpiReplicaSpecs.Launcher.replicas"},
      {"slotsPerWorker: 0\n  mpiReplicaSpecs: {Launcher: {}, Worker: {}}", "spec.slotsPerWorker"},
      {"mpiImplementation: MVAPICH\n  mpiReplicaSpecs: {Launcher: {}, Worker: {}}",
       "spec.mpiImplementation"},
  };
  for (const auto& [body, field] : bad) {
    auto r = TranslateManifest(
        "apiVersion: kubeflow.org/v2beta1\nkind: MPIJob\nmetadata: {name: x}\nspec:\n  " + body +
            "\n",
        "inline", "default");
    ASSERT_FALSE(r.ok()) << body;
    EXPECT_NE(r.status().message().find(field), std::string::npos) << r.status().message();
  }
  // A Tessera Job's launcher must be a task of one pod, beside workers.
  json one = job;
  one["spec"]["tasks"][0]["replicas"] = 2;
  EXPECT_NE(DecodeJob(one).status().message().find("spec.mpi.launcher"), std::string::npos);
}

TEST(Manifest, KubeflowPyTorchJobIsOneGangOfMasterAndWorkers) {
  std::vector<std::vector<std::string>> warnings;
  auto objs = TranslateManifest(R"(
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata:
  name: pytorch-simple
  namespace: kubeflow
spec:
  pytorchReplicaSpecs:
    Master:
      replicas: 1
      restartPolicy: OnFailure
      template:
        spec:
          containers:
            - name: pytorch
              image: docker.io/kubeflowkatib/pytorch-mnist:v1beta1-45c5727
              imagePullPolicy: Always
              command: ["python3", "/opt/pytorch-mnist/mnist.py", "--epochs=1"]
    Worker:
      replicas: 1
      restartPolicy: OnFailure
      template:
        spec:
          containers:
            - name: pytorch
              image: docker.io/kubeflowkatib/pytorch-mnist:v1beta1-45c5727
              imagePullPolicy: Always
              command: ["python3", "/opt/pytorch-mnist/mnist.py", "--epochs=1"]
)",
                                "inline", "default", &warnings);
  ASSERT_TRUE(objs.ok()) << objs.status().message();
  ASSERT_EQ(objs->size(), 1u);
  const json& job = (*objs)[0];
  EXPECT_EQ(job["metadata"]["namespace"], "kubeflow");
  EXPECT_EQ(job["spec"]["minMember"], 2);
  ASSERT_EQ(job["spec"]["tasks"].size(), 2u);
  EXPECT_EQ(job["spec"]["tasks"][0]["name"], "master");  // rank 0, MASTER_ADDR
  EXPECT_EQ(job["spec"]["tasks"][1]["name"], "worker");
  EXPECT_EQ(job["spec"]["tasks"][1]["restartPolicy"], "OnFailure");
  EXPECT_EQ(job["spec"]["tasks"][1]["image"],
            "docker.io/kubeflowkatib/pytorch-mnist:v1beta1-45c5727");
  auto decoded = DecodeJob(job);
  ASSERT_TRUE(decoded.ok()) << decoded.status().message();

  // Elastic: the gang is the master and minReplicas workers; rendezvous settings are the
  // operator's, warned; torchrun's processes per pod come through.
  warnings.clear();
  auto elastic = TranslateManifest(R"(
apiVersion: kubeflow.org/v1
kind: PyTorchJob
metadata: {name: elastic, labels: {kueue.x-k8s.io/queue-name: team-q}}
spec:
  nprocPerNode: "2"
  elasticPolicy: {rdzvBackend: c10d, minReplicas: 1, maxReplicas: 3}
  runPolicy: {backoffLimit: 3, schedulingPolicy: {priorityClass: high}}
  pytorchReplicaSpecs:
    Worker:
      replicas: 3
      template:
        spec:
          containers: [{name: pytorch, command: [torchrun, train.py],
                        resources: {limits: {nvidia.com/gpu: 2}}}]
)",
                                   "inline", "default", &warnings);
  ASSERT_TRUE(elastic.ok()) << elastic.status().message();
  const json& e = (*elastic)[0]["spec"];
  EXPECT_EQ(e["minMember"], 1);
  EXPECT_EQ(e["queue"], "team-q");
  EXPECT_EQ(e["priorityClassName"], "high");
  EXPECT_EQ(e["tasks"][0]["maxRetries"], 3);
  EXPECT_EQ(e["tasks"][0]["env"]["PET_NPROC_PER_NODE"], "2");
  ASSERT_EQ(warnings.size(), 1u);
  ASSERT_EQ(warnings[0].size(), 1u);
  EXPECT_NE(warnings[0][0].find("spec.elasticPolicy.rdzvBackend: not acted on"), std::string::npos);
  // What it cannot be is refused naming the field.
  const std::string bad[][2] = {
      {"pytorchReplicaSpecs: {Chief: {replicas: 1}}", "spec.pytorchReplicaSpecs.Chief"},
      {"pytorchReplicaSpecs: {Master: {replicas: 2}}", "spec.pytorchReplicaSpecs.Master.replicas"},
      {"elasticPolicy: {minReplicas: 1, maxReplicas: 1}\n  pytorchReplicaSpecs: {Worker: "
       "{replicas: 2, template: {spec: {containers: [{name: c, command: [x]}]}}}}",
       "spec.pytorchReplicaSpecs.Worker.replicas"},
      {"runPolicy: {schedulingPolicy: {minAvailable: 5}}\n  pytorchReplicaSpecs: {Worker: "
       "{replicas: 2, template: {spec: {containers: [{name: c, command: [x]}]}}}}",
       "spec.runPolicy.schedulingPolicy.minAvailable"},
  };
  for (const auto& [body, field] : bad) {
    auto r = TranslateManifest(
        "apiVersion: kubeflow.org/v1\nkind: PyTorchJob\nmetadata: {name: x}\nspec:\n  " + body +
            "\n",
        "inline", "default");
    ASSERT_FALSE(r.ok()) << body;
    EXPECT_NE(r.status().message().find(field), std::string::npos)
        << field << ": " << r.status().message();
  }
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

// flavorFungibility in v1beta1 (Borrow/Preempt) and v1beta2 (MayStopSearch) names: acted on,
// with no warning.
TEST(Manifest, KueueFlavorFungibilityInBothVersions) {
  struct Case {
    const char* version;
    const char* fungibility;
    bool try_next_before_borrowing;
    bool preempt_before_next_flavor;
  };
  for (const Case& c : {
           Case{"v1beta1", "{}", false, false},
           Case{"v1beta1", "{whenCanBorrow: TryNextFlavor, whenCanPreempt: Preempt}", true, true},
           Case{"v1beta1", "{whenCanBorrow: Borrow, whenCanPreempt: TryNextFlavor}", false, false},
           Case{"v1beta2", "{whenCanBorrow: MayStopSearch, whenCanPreempt: MayStopSearch}", false,
                true},
       }) {
    SCOPED_TRACE(std::string(c.version) + " " + c.fungibility);
    auto docs = ParseYamlDocuments(std::string("apiVersion: kueue.x-k8s.io/") + c.version +
                                   "\nkind: ClusterQueue\nmetadata: {name: q}\nspec:\n"
                                   "  namespaceSelector: {}\n  flavorFungibility: " +
                                   c.fungibility + "\n  resourceGroups: []\n");
    ASSERT_TRUE(docs.ok()) << docs.status().message();
    std::vector<std::string> warnings;
    auto objs = TranslateDocument((*docs)[0], "default", &warnings);
    ASSERT_TRUE(objs.ok()) << objs.status().message();
    EXPECT_TRUE(warnings.empty()) << warnings[0];
    auto q = DecodeQueue((*objs)[0]);
    ASSERT_TRUE(q.ok()) << q.status().message();
    EXPECT_EQ(q->try_next_flavor_before_borrowing, c.try_next_before_borrowing);
    EXPECT_EQ(q->preempt_before_next_flavor, c.preempt_before_next_flavor);
  }
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

// A card's shares through MPS: `shared: {mps: true}`; a misspelt field is refused, named.
TEST(Manifest, SharedCardsMayGoThroughMps) {
  auto config = [](const std::string& shared) {
    return json::parse(R"({"apiVersion": "tessera.io/v1", "kind": "GpuSharingConfig",
                           "metadata": {"name": "mps"}, "spec": {"shared": )" +
                       shared + "}}");
  };
  auto mps = DecodeGpuSharingConfig(config(R"({"mps": true})"));
  ASSERT_TRUE(mps.ok()) << mps.status().message();
  EXPECT_EQ(mps->sharing.mode, core::SharingMode::kShared);
  EXPECT_TRUE(mps->sharing.mps);
  auto plain = DecodeGpuSharingConfig(config("{}"));
  ASSERT_TRUE(plain.ok());
  EXPECT_FALSE(plain->sharing.mps);
  auto typo = DecodeGpuSharingConfig(config(R"({"mpss": true})"));
  ASSERT_FALSE(typo.ok());
  EXPECT_NE(typo.status().message().find("spec.shared.mpss"), std::string::npos)
      << typo.status().message();
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
      {"apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers: "
       "[{name: c, imagePullPolcy: Always}]\n",
       "document 1 (Pod p): spec.containers[0].imagePullPolcy: unknown field (did you mean "
       "\"imagePullPolicy\"?)"},
      {"apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers:\n  - name: c\n    "
       "env: [{name: A, valueFrom: {x: 1}}]\n",
       "spec.containers[0].env[0].valueFrom"},
      {"apiVersion: batch/v1\nkind: Job\nmetadata: {name: j}\nspec:\n  parallelism: 0\n  "
       "completions: 4\n  template: {spec: {containers: [{name: c}]}}\n",
       "spec.parallelism: 0 (a paused Job) is not supported"},
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

// Kubernetes' arrays: completions other than parallelism, or Indexed, are one Tessera Job
// whose one task runs parallelism at a time (never more than completions).
TEST(Manifest, BatchJobArraysKeepCompletionsAndTheirPolicies) {
  std::vector<std::vector<std::string>> warnings;
  auto r = TranslateManifest(R"(
apiVersion: batch/v1
kind: Job
metadata: {name: arr}
spec:
  completions: 3
  parallelism: 10
  completionMode: Indexed
  backoffLimitPerIndex: 2
  maxFailedIndexes: 1
  template:
    spec:
      restartPolicy: OnFailure
      containers:
      - name: c
        env:
        - name: IDX
          valueFrom:
            fieldRef: {fieldPath: "metadata.annotations['batch.kubernetes.io/job-completion-index']"}
)",
                             "in.yaml", "default", &warnings);
  ASSERT_TRUE(r.ok()) << r.status().message();
  const json spec = (*r)[0]["spec"];
  EXPECT_EQ(spec["completions"], 3);
  EXPECT_EQ(spec["completionMode"], "Indexed");
  EXPECT_EQ(spec["backoffLimitPerIndex"], 2);
  EXPECT_EQ(spec["maxFailedIndexes"], 1);
  EXPECT_EQ(spec["tasks"][0]["replicas"], 3);  // parallelism beyond completions is not used
  EXPECT_EQ(spec["tasks"][0]["restartPolicy"], "Never");
  EXPECT_FALSE(spec["tasks"][0].contains("maxRetries"));
  EXPECT_EQ(spec["tasks"][0]["fieldEnv"]["IDX"], "completionIndex");
  ASSERT_EQ(warnings.size(), 1u);
  ASSERT_EQ(warnings[0].size(), 1u);
  EXPECT_NE(warnings[0][0].find("restartPolicy: OnFailure runs as Never"), std::string::npos)
      << warnings[0][0];

  // completions equal to parallelism, NonIndexed: the pods run together, as before.
  warnings.clear();
  r = TranslateManifest(
      "apiVersion: batch/v1\nkind: Job\nmetadata: {name: g}\nspec:\n  parallelism: 2\n  "
      "completions: 2\n  backoffLimit: 3\n  template: {spec: {containers: [{name: c}]}}\n",
      "in.yaml", "default", &warnings);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_FALSE((*r)[0]["spec"].contains("completions"));
  EXPECT_EQ((*r)[0]["spec"]["tasks"][0]["maxRetries"], 3);
  EXPECT_TRUE(warnings[0].empty()) << warnings[0][0];
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
           {"{privilegd: true}",
            "spec.containers[0].securityContext.privilegd: unknown field "
            "(did you mean \"privileged\"?)"},
           {"{runAsUser: -1}", "spec.containers[0].securityContext.runAsUser"},
           {"{runAsUser: 0, runAsNonRoot: true}",
            "spec.containers[0].securityContext.runAsNonRoot: is true but runAsUser is 0"},
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

// An ordinary Pod spec, every field Kubernetes users write: what Tessera acts on lands in the
// task; the rest is accepted with one warning per field naming it.
TEST(Manifest, AnOrdinaryPodSpecIsActedOnOrAcceptedWithAWarningPerField) {
  std::vector<std::string> warnings;
  auto docs = ParseYamlDocuments(R"(apiVersion: v1
kind: Pod
metadata:
  name: trainer
  namespace: ml
  labels: {team: vision}
  annotations: {owner: ana}
  uid: 7f0c
spec:
  serviceAccountName: trainer
  priority: 100
  hostNetwork: false
  nodeName: gpu-a
  terminationGracePeriodSeconds: 45
  affinity:
    nodeAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
        nodeSelectorTerms:
        - matchExpressions: [{key: gpu.model, operator: In, values: [H100, A100]}]
      preferredDuringSchedulingIgnoredDuringExecution:
      - weight: 10
        preference: {matchExpressions: [{key: zone, operator: In, values: [a]}]}
    podAntiAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
      - topologyKey: kubernetes.io/hostname
  initContainers: [{name: fetch, image: busybox}]
  volumes:
  - {name: data, hostPath: {path: /data}}
  - {name: scratch, emptyDir: {}}
  - {name: creds, secret: {secretName: s3}}
  containers:
  - name: main
    command: [python, train.py]
    workingDir: /work
    imagePullPolicy: IfNotPresent
    ports: [{name: metrics, containerPort: 9400}, {containerPort: 29500}]
    livenessProbe: {exec: {command: ["true"]}}
    volumeMounts:
    - {name: data, mountPath: /data, readOnly: true}
    - {name: scratch, mountPath: /scratch}
    - {name: creds, mountPath: /creds}
    env:
    - {name: PLAIN, value: x}
    - {name: POD_NAME, valueFrom: {fieldRef: {fieldPath: metadata.name}}}
    - {name: POD_NS, valueFrom: {fieldRef: {fieldPath: metadata.namespace}}}
    - {name: NODE, valueFrom: {fieldRef: {fieldPath: spec.nodeName}}}
    - {name: TEAM, valueFrom: {fieldRef: {fieldPath: "metadata.labels['team']"}}}
    - {name: CPUS, valueFrom: {resourceFieldRef: {resource: limits.cpu}}}
    - {name: MEM_MI, valueFrom: {resourceFieldRef: {resource: limits.memory, divisor: 1Mi}}}
    - {name: TOKEN, valueFrom: {secretKeyRef: {name: s3, key: token}}}
    resources:
      limits: {nvidia.com/gpu: 1, cpu: 1500m, memory: 2Gi}
)");
  ASSERT_TRUE(docs.ok()) << docs.status().message();
  auto objs = TranslateDocument((*docs)[0], "default", &warnings);
  ASSERT_TRUE(objs.ok()) << objs.status().message();
  const json& task = (*objs)[0]["spec"]["tasks"][0];
  EXPECT_EQ(task["workingDir"], "/work");
  EXPECT_EQ(task["terminationGracePeriodSeconds"], 45);
  EXPECT_EQ(task["nodeSelector"]["kubernetes.io/hostname"], "gpu-a");
  EXPECT_EQ(task["env"]["PLAIN"], "x");
  EXPECT_EQ(task["env"]["POD_NS"], "ml");
  EXPECT_EQ(task["env"]["POD_NAME"], "trainer");
  EXPECT_EQ(task["env"]["TEAM"], "vision");
  EXPECT_EQ(task["env"]["CPUS"], "2");  // 1.5 cores rounded up, as Kubernetes does
  EXPECT_EQ(task["env"]["MEM_MI"], "2048");
  EXPECT_FALSE(task["env"].contains("TOKEN"));
  EXPECT_EQ(task["fieldEnv"]["NODE"], "spec.nodeName");
  EXPECT_EQ(task["env"]["TESSERA_PORT_METRICS"], "9400");
  EXPECT_EQ(task["env"]["TESSERA_PORTS"], "9400,29500");
  ASSERT_EQ(task["volumes"].size(), 2u) << task.dump();
  EXPECT_EQ(
      task["volumes"][0],
      json({{"name", "data"}, {"mountPath", "/data"}, {"hostPath", "/data"}, {"readOnly", true}}));
  EXPECT_EQ(task["volumes"][1]["emptyDir"], true);

  // Node affinity reaches the placement core.
  auto job = DecodeJob((*objs)[0]);
  ASSERT_TRUE(job.ok()) << job.status().message();
  const core::PodSpec& pod = job->workload.pod_sets[0].pod;
  ASSERT_EQ(pod.required_terms.size(), 1u);
  EXPECT_EQ(pod.required_terms[0].requirements[0].key, "gpu.model");
  EXPECT_EQ(pod.required_terms[0].requirements[0].values,
            (std::vector<std::string>{"H100", "A100"}));
  ASSERT_EQ(pod.preferred_terms.size(), 1u);
  EXPECT_EQ(pod.preferred_terms[0].weight, 10);

  // One warning per field not acted on, each naming it; none for hostNetwork: false or for
  // what is acted on.
  std::string all;
  for (const std::string& w : warnings) all += w + "\n";
  for (const char* field :
       {"metadata.uid:", "spec.serviceAccountName:", "spec.priority:", "spec.initContainers:",
        "spec.affinity.podAntiAffinity:", "spec.containers[0].livenessProbe:",
        "spec.containers[0].volumeMounts[1]:", "spec.containers[0].volumeMounts[2]:",
        "spec.containers[0].env[7].valueFrom.secretKeyRef:"}) {
    EXPECT_NE(all.find(field), std::string::npos) << field << " in\n" << all;
  }
  EXPECT_EQ(warnings.size(), 9u) << all;
  EXPECT_EQ(all.find("hostNetwork"), std::string::npos);
  EXPECT_EQ(all.find("volumeMounts[0]"), std::string::npos) << all;  // /data is at /data
}

TEST(Manifest, MisspeltFieldsAreRefusedWithTheClosestName) {
  for (const auto& [yaml, message] : std::vector<std::pair<std::string, std::string>>{
           {"spec: {nodeSelecter: {a: b}, containers: [{name: c}]}",
            "spec.nodeSelecter: unknown field (did you mean \"nodeSelector\"?)"},
           {"spec: {containers: [{name: c, comand: [x]}]}",
            "spec.containers[0].comand: unknown field (did you mean \"command\"?)"},
           {"spec: {containers: [{name: c, resources: {limit: {cpu: 1}}}]}",
            "spec.containers[0].resources.limit: unknown field (did you mean \"limits\"?)"},
           {"spec: {containers: [{name: c}], zzz: 1}", "spec.zzz: unknown field\n"},
           {"sepc: {containers: [{name: c}]}", "sepc: unknown field (did you mean \"spec\"?)"},
       }) {
    auto r = TranslateManifest("apiVersion: v1\nkind: Pod\nmetadata: {name: p}\n" + yaml + "\n",
                               "in.yaml", "default");
    ASSERT_FALSE(r.ok()) << yaml;
    const std::string m = r.status().message() + "\n";
    EXPECT_NE(m.find(message), std::string::npos) << m;
  }
  EXPECT_EQ(ClosestName("NodeSelector", {"nodeSelector", "nodeName"}), "nodeSelector");
  EXPECT_EQ(ClosestName("xyz", {"nodeSelector", "nodeName"}), "");
}

}  // namespace
}  // namespace tessera::api

namespace tessera::api {
namespace {

// Volcano's lifecycle policies: what Tessera does anyway (an evicted gang restarts whole) is
// accepted quietly, the rest with a warning each; runningEstimate feeds backfill.
TEST(Manifest, VolcanoPoliciesAndRunningEstimate) {
  std::vector<std::string> warnings;
  auto docs = ParseYamlDocuments(R"(apiVersion: batch.volcano.sh/v1alpha1
kind: Job
metadata: {name: tf}
spec:
  minAvailable: 2
  runningEstimate: 2h
  policies:
  - {event: PodEvicted, action: RestartJob}
  - {event: PodFailed, action: AbortJob}
  tasks:
  - name: ps
    replicas: 1
    policies: [{event: TaskCompleted, action: CompleteJob}]
    template: {spec: {containers: [{name: c, command: ["true"]}]}}
  - name: worker
    replicas: 2
    template: {spec: {containers: [{name: c, command: ["true"]}]}}
)");
  ASSERT_TRUE(docs.ok());
  auto objs = TranslateDocument((*docs)[0], "default", &warnings);
  ASSERT_TRUE(objs.ok()) << objs.status().message();
  EXPECT_EQ((*objs)[0]["spec"]["estimatedRuntimeSeconds"], 7200);
  ASSERT_EQ(warnings.size(), 2u);
  EXPECT_EQ(warnings[0].rfind("spec.policies[1]: not acted on: PodFailed -> AbortJob", 0), 0u)
      << warnings[0];
  EXPECT_EQ(warnings[1].rfind("spec.tasks[0].policies[0]: not acted on: TaskCompleted -> "
                              "CompleteJob",
                              0),
            0u)
      << warnings[1];
}

// Task minAvailable as Volcano reads it: a task without one needs all its replicas, a job
// without minAvailable needs the sum of its tasks', and each task is held to its own minimum
// only while the job's minAvailable is at least that sum. The cases are the table of Volcano's
// docs/design/min-avaiable-member-resource.md (master and work, 2 replicas each).
TEST(Manifest, VolcanoTaskMinAvailableAsVolcanoReadsIt) {
  struct Row {
    int job_min;     // 0: unset
    int master_min;  // -1: unset
    int work_min;
    int want_min_member;
    int want_master;  // per-task minimum; 0: none
    int want_work;
  };
  const Row rows[] = {
      {0, -1, 1, 3, 2, 1}, {0, 1, 1, 2, 1, 1}, {3, -1, 1, 3, 2, 1}, {3, 1, -1, 3, 1, 2},
      {3, 1, 1, 3, 1, 1},  {2, 1, 1, 2, 1, 1}, {2, -1, 1, 2, 0, 0}, {2, 1, -1, 2, 0, 0},
  };
  for (const Row& r : rows) {
    auto task = [](const char* name, int min) {
      std::string t = std::string("  - name: ") + name + "\n    replicas: 2\n";
      if (min >= 0) t += "    minAvailable: " + std::to_string(min) + "\n";
      return t + "    template: {spec: {containers: [{name: c, command: [\"true\"]}]}}\n";
    };
    std::string yaml =
        "apiVersion: batch.volcano.sh/v1alpha1\nkind: Job\nmetadata: {name: j}\nspec:\n";
    if (r.job_min > 0) yaml += "  minAvailable: " + std::to_string(r.job_min) + "\n";
    yaml += "  tasks:\n" + task("master", r.master_min) + task("work", r.work_min);
    const std::string label = "job " + std::to_string(r.job_min) + ", master " +
                              std::to_string(r.master_min) + ", work " + std::to_string(r.work_min);
    auto objs = TranslateManifest(yaml, "j.yaml", "default");
    ASSERT_TRUE(objs.ok()) << label << ": " << objs.status().message();
    const core::Workload w = JobOf((*objs)[0]);
    ASSERT_EQ(w.pod_sets.size(), 2u) << label;
    EXPECT_EQ(w.min_member, r.want_min_member) << label;
    EXPECT_EQ(w.pod_sets[0].min_count, r.want_master) << label;
    EXPECT_EQ(w.pod_sets[1].min_count, r.want_work) << label;
  }
  // Out of range: the field and the bound are named.
  auto bad = TranslateManifest(
      "apiVersion: batch.volcano.sh/v1alpha1\nkind: Job\nmetadata: {name: j}\nspec:\n  tasks:\n"
      "  - {name: w, replicas: 2, minAvailable: 3, template: {spec: {containers: [{name: c}]}}}\n",
      "j.yaml", "default");
  ASSERT_FALSE(bad.ok());
  EXPECT_NE(bad.status().message().find("spec.tasks[0].minAvailable"), std::string::npos)
      << bad.status().message();
}

// A Job's status lists each of its pods: more than kMaxJobPods (Kubernetes' bound on an Indexed
// Job's completions) is refused naming spec.tasks, however the tasks add up.
TEST(Manifest, AJobHasAtMostOneHundredThousandPods) {
  auto job_of = [](int tasks, int replicas) {
    json t = json::array();
    for (int i = 0; i < tasks; ++i) {
      t.push_back({{"name", "t" + std::to_string(i)},
                   {"replicas", replicas},
                   {"command", {"true"}},
                   {"resources", {{"limits", {{"nvidia.com/gpu", 1}}}}}});
    }
    return json{{"apiVersion", "tessera.io/v1"},
                {"kind", "Job"},
                {"metadata", {{"name", "big"}, {"namespace", "default"}}},
                {"spec", {{"tasks", t}}}};
  };
  EXPECT_TRUE(DecodeJob(job_of(10, 10'000)).ok());
  auto over = DecodeJob(job_of(11, 10'000));
  ASSERT_FALSE(over.ok());
  EXPECT_NE(over.status().message().find("spec.tasks: more than 100000 pods"), std::string::npos)
      << over.status().message();
  EXPECT_FALSE(ValidateSpec(job_of(64, 10'000)).ok());
}

}  // namespace
}  // namespace tessera::api
