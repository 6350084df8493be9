// Placement throughput and state size on synthetic clusters.
//
//   BM_Place/<policy>/<nodes>: one placement (filter, devices, score, reserve) per iteration on a
//   cluster of <nodes> 8-GPU nodes, with a mix of whole, fractional and MIG requests.
//   items_per_second is the placement rate. The cluster is refilled from a fresh copy whenever
//   it runs out of room, outside the timed region.
//   BM_PlaceAll/<policy>/<nodes>: the same with every feasible node scored
//   (percentage_of_nodes_to_score = 100).
//   BM_StateBytesPerNode/<nodes>: heap bytes held by a ClusterState per node, counted by
//   replacing the global operator new.
#include <benchmark/benchmark.h>

#include <atomic>
#include <cstdlib>
#include <new>
#include <string>
#include <vector>

#include "core/cluster_state.h"
#include "core/scheduler.h"

namespace {

std::atomic<int64_t> g_live_bytes{0};

}  // namespace

void* operator new(size_t n) {
  void* p = std::malloc(n + 16);
  if (p == nullptr) throw std::bad_alloc();
  *static_cast<size_t*>(p) = n;
  g_live_bytes.fetch_add(static_cast<int64_t>(n), std::memory_order_relaxed);
  return static_cast<char*>(p) + 16;
}
void operator delete(void* p) noexcept {
  if (p == nullptr) return;
  char* base = static_cast<char*>(p) - 16;
  g_live_bytes.fetch_sub(static_cast<int64_t>(*reinterpret_cast<size_t*>(base)),
                         std::memory_order_relaxed);
  std::free(base);
}
void operator delete(void* p, size_t) noexcept { operator delete(p); }

namespace tessera::core {
namespace {

// Pools of a real fleet: H100 training nodes (NVLink, exclusive), A100 nodes with two MIG cards
// and six shared cards, T4 / A10 inference nodes with shared cards.
ClusterState MakeCluster(int nodes) {
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
std::vector<PodSpec> MakePods() {
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

void RunPlace(benchmark::State& st, const char* policy, int pct) {
  const int nodes = static_cast<int>(st.range(0));
  const ClusterState fresh = MakeCluster(nodes);
  const std::vector<PodSpec> pods = MakePods();
  SchedulerConfig config;
  config.policy = policy;
  config.seed = 42;
  config.percentage_of_nodes_to_score = pct;
  auto sched = Scheduler::Create(config).value();
  ClusterState state = fresh;
  size_t i = 0;
  int64_t placed = 0;
  int64_t failed_in_row = 0;
  for (auto _ : st) {
    PlaceOutcome o = sched->Schedule(state, pods[i++ % pods.size()]);
    if (o.ok) {
      ++placed;
      failed_in_row = 0;
    } else if (++failed_in_row > static_cast<int64_t>(pods.size())) {
      st.PauseTiming();
      state = fresh;  // full: start over
      failed_in_row = 0;
      st.ResumeTiming();
    }
  }
  st.SetItemsProcessed(static_cast<int64_t>(st.iterations()));
  st.counters["placed_frac"] = static_cast<double>(placed) / static_cast<double>(st.iterations());
}

void BM_StateBytesPerNode(benchmark::State& st) {
  const int nodes = static_cast<int>(st.range(0));
  double per_node = 0;
  for (auto _ : st) {
    const int64_t before = g_live_bytes.load();
    {
      ClusterState s = MakeCluster(nodes);
      per_node = static_cast<double>(g_live_bytes.load() - before) / nodes;
      benchmark::DoNotOptimize(s);
    }
  }
  st.counters["bytes_per_node"] = per_node;
}

#define TESSERA_PLACE_BENCH(policy)                                               \
  void BM_Place_##policy(benchmark::State& st) { RunPlace(st, #policy, 0); }      \
  BENCHMARK(BM_Place_##policy)                                                    \
      ->Name("BM_Place/" #policy)                                                 \
      ->Arg(1000)                                                                 \
      ->Arg(10000)                                                                \
      ->Unit(benchmark::kMicrosecond);                                            \
  void BM_PlaceAll_##policy(benchmark::State& st) { RunPlace(st, #policy, 100); } \
  BENCHMARK(BM_PlaceAll_##policy)                                                 \
      ->Name("BM_PlaceAll/" #policy)                                              \
      ->Arg(1000)                                                                 \
      ->Arg(10000)                                                                \
      ->Unit(benchmark::kMicrosecond);

TESSERA_PLACE_BENCH(bestfit)
TESSERA_PLACE_BENCH(spread)
TESSERA_PLACE_BENCH(gpupacking)
TESSERA_PLACE_BENCH(dotproduct)
TESSERA_PLACE_BENCH(random)
TESSERA_PLACE_BENCH(fgd)

BENCHMARK(BM_StateBytesPerNode)
    ->Arg(1000)
    ->Arg(10000)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);

}  // namespace
}  // namespace tessera::core

BENCHMARK_MAIN();
