#include "cli/demo.h"

#include <iomanip>
#include <sstream>
#include <vector>

#include "api/resources.h"
#include "core/scheduler.h"

namespace tessera::cli {

namespace {

using namespace tessera::core;

GpuDevice Gpu(int index, const std::string& node, const std::string& model, int64_t mem, int numa,
              int link) {
  GpuDevice g;
  g.index = static_cast<uint16_t>(index);
  std::ostringstream uuid;
  uuid << "GPU-" << node << "-" << std::setw(2) << std::setfill('0') << index;
  g.uuid = uuid.str();
  g.model = model;
  g.memory_mib = mem;
  g.numa_node = static_cast<int16_t>(numa);
  g.nvlink_domain = static_cast<int16_t>(link);
  return g;
}

NodeSpec Dgx(int i) {
  NodeSpec n;
  n.name = "dgx-h100-" + std::to_string(i);
  n.allocatable = {224000, 2048 * 1024};
  n.labels = {{"nvidia.com/gpu.product", "H100-80GB"},
              {"nvidia.com/gpu.count", "8"},
              {"accelerator", "nvidia-h100"}};
  for (int g = 0; g < 8; ++g) n.gpus.push_back(Gpu(g, n.name, "H100-80GB", 81559, g / 4, 0));
  return n;
}

NodeSpec Mixed() {
  NodeSpec n;
  n.name = "a100-mixed-0";
  n.allocatable = {128000, 1024 * 1024};
  n.labels = {{"nvidia.com/gpu.product", "A100-40GB"}, {"gpu-type", "mig"}};
  n.taints = {{"gpu", "", TaintEffect::kNoSchedule}};
  for (int g = 0; g < 4; ++g) n.gpus.push_back(Gpu(g, n.name, "A100-40GB", 40960, 0, 0));
  n.gpus[1].sharing.mode = SharingMode::kTimeSlice;
  n.gpus[1].sharing.replicas = 4;
  n.gpus[1].sharing.rename = true;
  n.gpus[2].sharing.mode = SharingMode::kShared;
  n.gpus[3].sharing.mode = SharingMode::kMig;
  const MigGeometry* geo = FindMigGeometry("A100-40GB");
  std::vector<std::pair<std::string, int>> layout = {{"3g.20gb", 1}, {"2g.10gb", 1}, {"1g.5gb", 2}};
  n.gpus[3].sharing.mig = PlaceMigLayout(*geo, layout).value();
  return n;
}

NodeSpec V100() {
  NodeSpec n;
  n.name = "v100-0";
  n.allocatable = {64000, 512 * 1024};
  n.labels = {{"accelerator", "nvidia-tesla-v100"}, {"nvidia.com/gpu.count", "4"}};
  n.taints = {{"nvidia.com/gpu", "", TaintEffect::kNoSchedule}};
  for (int g = 0; g < 4; ++g) n.gpus.push_back(Gpu(g, n.name, "V100M32", 32768, g / 2, g / 2));
  return n;
}

NodeSpec T4() {
  NodeSpec n;
  n.name = "t4-0";
  n.allocatable = {32000, 128 * 1024};
  n.labels = {{"accelerator", "nvidia-tesla-t4"}};
  for (int g = 0; g < 2; ++g) {
    n.gpus.push_back(Gpu(g, n.name, "T4", 15360, 0, -1));
    n.gpus.back().sharing.mode = SharingMode::kShared;
  }
  return n;
}

struct DemoPod {
  std::string source;
  PodSpec spec;
};

PodSpec Pod(const std::string& name, const api::ResourceList& limits) {
  PodSpec p;
  p.name = name;
  Status s = api::ApplyContainerResources(limits, {}, "spec.containers[0].resources", &p);
  if (!s.ok()) p.name += " (invalid: " + s.message() + ")";
  return p;
}

std::string Describe(const ClusterState& state, const Placement& p) {
  const NodeRecord& n = state.node(p.node);
  std::ostringstream o;
  o << n.name;
  if (p.devices.empty()) return o.str() + " (no GPU)";
  o << " GPU";
  for (size_t i = 0; i < p.devices.size(); ++i) {
    const DeviceAssignment& d = p.devices[i];
    const GpuDevice& g = n.gpus[d.gpu];
    o << (i ? ", " : " ") << g.index;
    switch (d.kind) {
      case DeviceKind::kWhole:
        o << " (whole " << g.model << ")";
        break;
      case DeviceKind::kShare:
        o << " (share " << d.milli << "m, " << d.memory_mib << " MiB)";
        break;
      case DeviceKind::kMigInstance: {
        const MigGeometry* geo = FindMigGeometry(g.model);
        const MigInstance& in = g.sharing.mig[d.mig_instance];
        o << " (MIG " << geo->profiles[in.profile].name << " at slice " << int(in.start) << ")";
        break;
      }
      case DeviceKind::kReplica:
        o << " (" << d.replicas << " of " << g.sharing.replicas << " time-slice replicas)";
        break;
    }
  }
  return o.str();
}

}  // namespace

int RunDemo(const std::string& policy, uint64_t seed, std::ostream& out) {
  ClusterState state;
  std::vector<NodeSpec> nodes;
  for (int i = 0; i < 5; ++i) nodes.push_back(Dgx(i));
  nodes.push_back(Mixed());
  nodes.push_back(V100());
  nodes.push_back(T4());
  for (NodeSpec& n : nodes) {
    Result<NodeId> id = state.AddNode(std::move(n));
    if (!id.ok()) {
      out << "CHECK FAILED: " << id.status().message() << "\n";
      return 1;
    }
  }
  SchedulerConfig config;
  config.policy = policy;
  config.seed = seed;
  auto sched = Scheduler::Create(config);
  if (!sched.ok()) {
    out << "error: " << sched.status().message() << "\n";
    return 2;
  }
  Scheduler& s = **sched;

  out << "Tessera placement demo: policy " << policy << ", " << state.size() << " nodes, "
      << state.total_gpu_milli() / 1000 << " GPUs\n"
      << "  5x dgx-h100 (8x H100-80GB, NVLink, 2 NUMA nodes), a100-mixed-0 (GPU0 whole, GPU1 "
         "time-sliced x4, GPU2 shared, GPU3 MIG 3g+2g+1g+1g; taint gpu:NoSchedule),\n"
      << "  v100-0 (4x V100M32; taint nvidia.com/gpu:NoSchedule), t4-0 (2x T4, shared)\n\n";

  std::vector<DemoPod> pods;
  {
    PodSpec p = Pod("gpu-training", {{"nvidia.com/gpu", "2"}});
    p.node_selector = {{"accelerator", "nvidia-tesla-v100"}};
    p.tolerations.push_back(
        {"nvidia.com/gpu", TolerationOp::kExists, "", false, TaintEffect::kNoSchedule});
    pods.push_back({"01-pod-gpu-training.yaml", p});
  }
  pods.push_back({"03-cgpu-pods.yaml", Pod("cgpu-pod", {{"aliyun.com/gpu-mem", "4"}})});
  pods.push_back(
      {"03-cgpu-pods.yaml",
       Pod("cgpu-full-isolation", {{"aliyun.com/gpu-mem", "8"}, {"aliyun.com/gpu-core", "50"}})});
  {
    PodSpec p =
        Pod("gpu-topology-aware", {{"nvidia.com/gpu", "2"}, {"cpu", "8"}, {"memory", "32Gi"}});
    p.node_selector = {{"nvidia.com/gpu.count", "8"}};
    pods.push_back({"04-topology-aware-pod.yaml", p});
  }
  {
    PodSpec p = Pod("mig-inference", {{"nvidia.com/mig-1g.5gb", "1"}});
    p.node_selector = {{"gpu-type", "mig"}};
    p.tolerations.push_back({"gpu", TolerationOp::kExists, "", false, TaintEffect::kNoSchedule});
    pods.push_back({"08-mig-pod.yaml", p});
  }
  {
    PodSpec p = Pod("notebook", {{"nvidia.com/gpu.shared", "1"}});
    p.tolerations.push_back({"gpu", TolerationOp::kExists, "", false, TaintEffect::kNoSchedule});
    pods.push_back({"02-time-slicing-config.yaml", p});
  }
  {
    PodSpec p = Pod("v100m16-only", {{"nvidia.com/gpu", "1"}});
    p.gpu_models = api::ParseGpuModels("V100M16");
    pods.push_back({"(a model nobody has)", p});
  }

  int failures = 0;
  for (const DemoPod& dp : pods) {
    PlaceOutcome o = s.Schedule(state, dp.spec);
    out << "pod " << std::left << std::setw(20) << dp.spec.name << " [" << dp.source << "]\n    ";
    if (o.ok) {
      out << "-> " << Describe(state, o.placement) << "\n";
    } else {
      ++failures;
      out << "pending: " << o.reason << "\n";
    }
  }

  std::vector<PodSpec> workers(4, Pod("pytorch-distributed-worker", {{"nvidia.com/gpu", "8"}}));
  for (int i = 0; i < 4; ++i) workers[i].name = "pytorch-distributed-worker-" + std::to_string(i);
  GangOutcome g = s.ScheduleGang(state, workers, 4);
  int placed = 0;
  for (const auto& p : g.placements) placed += p.has_value();
  out << "\ngang pytorch-distributed: placed " << placed << "/" << workers.size()
      << " [05-volcano-gang.yaml, minMember 4]\n";
  for (size_t i = 0; i < workers.size(); ++i) {
    if (g.placements[i])
      out << "    " << workers[i].name << " -> " << Describe(state, *g.placements[i]) << "\n";
  }
  if (!g.ok) out << "    pending: " << g.reason << "\n";

  // A second gang cannot fit while the first holds the H100s: nothing of it is reserved.
  std::vector<PodSpec> more(2, Pod("second-gang-worker", {{"nvidia.com/gpu", "8"}}));
  const int64_t before = state.allocated_gpu_milli();
  GangOutcome g2 = s.ScheduleGang(state, more, 2);
  out << "gang second-gang: "
      << (g2.ok ? "placed"
                : "pending, nothing reserved (" +
                      std::to_string(state.allocated_gpu_milli() - before) + " milli-GPU taken)")
      << "\n    " << g2.reason << "\n";

  out << "\ncluster GPU allocation: " << std::fixed << std::setprecision(1)
      << 100.0 * state.allocated_gpu_milli() / state.total_gpu_milli() << "% of "
      << state.total_gpu_milli() << " milli-GPU\n";
  // Only the model-constrained pod is expected to stay pending.
  if (failures != 1 || !g.ok || g2.ok) {
    out << "CHECK FAILED: unexpected demo outcome\n";
    return 1;
  }
  return 0;
}

}  // namespace tessera::cli
