// A synthetic GPU fleet and request mix shared by the benchmarks.
#ifndef TESSERA_BENCH_BENCH_FLEET_H_
#define TESSERA_BENCH_BENCH_FLEET_H_

#include <cstdlib>
#include <string>
#include <utility>
#include <vector>

#include "core/cluster_state.h"
#include "core/mig.h"
#include "core/pod.h"

namespace tessera::core {

// Pools of a real fleet: H100 training nodes (NVLink, exclusive), A100 nodes with two MIG cards
// and six shared cards, T4 / A10 inference nodes with shared cards.
inline ClusterState MakeCluster(int nodes) {
  ClusterState s;
  const MigGeometry* a100 = FindMigGeometry("A100-80GB");
  const auto mig_layout = PlaceMigLayout(*a100,
                                         std::vector<std::pair<std::string, int>>{
                                             {"3g.40gb", 1}, {"2g.20gb", 1}, {"1g.10gb", 2}})
                              .value();
  for (int i = 0; i < nodes; ++i) {
    NodeSpec n;
    n.name = "node-" + std::to_string(i);
    n.allocatable = {96000, 1024 * 1024};
    const int pool = i % 4;
    const char* model = pool == 0   ? "H100-80GB"
                        : pool == 1 ? "A100-80GB"
                        : pool == 2 ? "A10"
                                    : "T4";
    const int64_t mem = pool <= 1 ? 81920 : pool == 2 ? 24576 : 15360;
    n.labels = {{"nvidia.com/gpu.product", model},
                {"nvidia.com/gpu.count", "8"},
                {"topology.kubernetes.io/zone", "zone-" + std::to_string(i % 3)}};
    if (pool == 0) n.taints = {{"nvidia.com/gpu", "training", TaintEffect::kNoSchedule}};
    for (int g = 0; g < 8; ++g) {
      GpuDevice d;
      d.index = static_cast<uint16_t>(g);
      d.uuid = "GPU-" + std::to_string(100000000 + i) + "-" + std::to_string(g) +
               "-0000-0000-000000000000";
      d.model = model;
      d.memory_mib = mem;
      d.numa_node = static_cast<int16_t>(g / 4);
      d.nvlink_domain = pool <= 1 ? 0 : -1;
      if (pool >= 2 || (pool == 1 && g >= 2)) d.sharing.mode = SharingMode::kShared;
      if (pool == 1 && g < 2) {
        d.sharing.mode = SharingMode::kMig;
        d.sharing.mig = mig_layout;
      }
      n.gpus.push_back(std::move(d));
    }
    if (!s.AddNode(std::move(n)).ok()) std::abort();
  }
  return s;
}

// The request mix, shaped like the Alibaba trace: mostly single cards and shares of common sizes,
// a few multi-card training pods (which tolerate the training taint), some MIG slices.
inline std::vector<PodSpec> MakePods() {
  std::vector<PodSpec> pods;
  auto add = [&](GpuRequest g, int64_t cpu, bool training) {
    PodSpec p;
    p.name = "pod";
    p.requests = {cpu, 16384};
    p.gpu = g;
    if (training) {
      p.tolerations.push_back(
          {"nvidia.com/gpu", TolerationOp::kExists, "", true, TaintEffect::kNoSchedule});
    }
    pods.push_back(p);
  };
  const int shares[] = {810, 470, 320, 650, 230, 460, 500, 250};
  for (int i = 0; i < 8; ++i) add({GpuRequestKind::kShare, 1, shares[i], 0, ""}, 6000, false);
  for (int i = 0; i < 6; ++i) add({GpuRequestKind::kWhole, 1, 0, 0, ""}, 12000, i % 2 == 0);
  add({GpuRequestKind::kWhole, 2, 0, 0, ""}, 16000, true);
  add({GpuRequestKind::kWhole, 8, 0, 0, ""}, 64000, true);
  add({GpuRequestKind::kMig, 1, 0, 0, "1g.10gb"}, 4000, false);
  add({GpuRequestKind::kMig, 1, 0, 0, "2g.20gb"}, 8000, false);
  return pods;
}

}  // namespace tessera::core

#endif  // TESSERA_BENCH_BENCH_FLEET_H_
