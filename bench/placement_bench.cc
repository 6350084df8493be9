// Placement throughput and state size on synthetic clusters.
//
//   BM_Place/<policy>/<nodes>: one placement (filter, devices, score, reserve) per iteration on a
//   cluster of <nodes> 8-GPU nodes, with a mix of whole, fractional and MIG requests.
//   items_per_second is the placement rate. The cluster is refilled from a fresh copy whenever
//   it runs out of room, outside the timed region.
//   BM_PlaceAll/<policy>/<nodes>: the same with every feasible node scored
//   (percentage_of_nodes_to_score = 100), one node per class of identical state examined and
//   scored (StateClasses).
//   BM_PlaceAllByNode/<policy>/<nodes>: the same with every node examined and scored on its own
//   (group_identical_nodes = false), to compare by turns in one run.
//   BM_PlaceAllSteady/<policy>/<nodes> (and ...SteadyByNode): every node scored on a cluster
//   kept 70% allocated, the oldest placement released as each new one lands (RunSteady).
//   BM_StateBytesPerNode/<nodes>: heap bytes held by a ClusterState per node, counted by
//   replacing the global operator new.
#include <benchmark/benchmark.h>

#include <atomic>
#include <cstdlib>
#include <deque>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "bench_fleet.h"
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

// The benchmarks' scheduler: `policy`, seed 42, scoring `pct`% of the nodes (0: adaptive),
// grouping identical nodes or not.
std::unique_ptr<Scheduler> MakeScheduler(const char* policy, int pct, bool group) {
  SchedulerConfig config;
  config.policy = policy;
  config.seed = 42;
  config.percentage_of_nodes_to_score = pct;
  config.group_identical_nodes = group;
  return Scheduler::Create(config).value();
}

void RunPlace(benchmark::State& st, const char* policy, int pct, bool group = true) {
  const int nodes = static_cast<int>(st.range(0));
  const ClusterState fresh = MakeCluster(nodes);
  const std::vector<PodSpec> pods = MakePods();
  auto sched = MakeScheduler(policy, pct, group);
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

// A cluster kept about 70% allocated: each iteration places one pod of the mix and, while the
// cluster is above 70%, releases the oldest placement (first in, first out), so node states
// drift apart as on a running cluster. The fill to 70% is not timed.
void RunSteady(benchmark::State& st, const char* policy, bool group) {
  const int nodes = static_cast<int>(st.range(0));
  ClusterState state = MakeCluster(nodes);
  const std::vector<PodSpec> pods = MakePods();
  auto sched = MakeScheduler(policy, 100, group);
  const int64_t target = state.total_gpu_milli() * 7 / 10;
  std::deque<std::pair<size_t, Placement>> held;
  size_t i = 0;
  for (int misses = 0; state.allocated_gpu_milli() < target && misses < 100;) {
    const size_t k = i++ % pods.size();
    PlaceOutcome o = sched->Schedule(state, pods[k]);
    misses = o.ok ? 0 : misses + 1;
    if (o.ok) held.emplace_back(k, std::move(o.placement));
  }
  int64_t placed = 0;
  int64_t classes = 0;
  for (auto _ : st) {
    const size_t k = i++ % pods.size();
    PlaceOutcome o = sched->Schedule(state, pods[k]);
    classes += static_cast<int64_t>(sched->state_classes());
    if (o.ok) {
      ++placed;
      held.emplace_back(k, std::move(o.placement));
    }
    while (state.allocated_gpu_milli() > target && !held.empty()) {
      if (!sched->Unreserve(state, pods[held.front().first], held.front().second).ok()) {
        std::abort();
      }
      held.pop_front();
    }
  }
  st.SetItemsProcessed(static_cast<int64_t>(st.iterations()));
  st.counters["placed_frac"] = static_cast<double>(placed) / static_cast<double>(st.iterations());
  // Classes of identical node state per placement (0 when placing node by node).
  st.counters["classes"] = static_cast<double>(classes) / static_cast<double>(st.iterations());
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

#define TESSERA_PLACE_BENCH(policy)                                                            \
  void BM_Place_##policy(benchmark::State& st) { RunPlace(st, #policy, 0); }                   \
  BENCHMARK(BM_Place_##policy)                                                                 \
      ->Name("BM_Place/" #policy)                                                              \
      ->Arg(1000)                                                                              \
      ->Arg(10000)                                                                             \
      ->Unit(benchmark::kMicrosecond);                                                         \
  void BM_PlaceAll_##policy(benchmark::State& st) { RunPlace(st, #policy, 100); }              \
  BENCHMARK(BM_PlaceAll_##policy)                                                              \
      ->Name("BM_PlaceAll/" #policy)                                                           \
      ->Arg(1000)                                                                              \
      ->Arg(10000)                                                                             \
      ->Unit(benchmark::kMicrosecond);                                                         \
  void BM_PlaceAllByNode_##policy(benchmark::State& st) { RunPlace(st, #policy, 100, false); } \
  BENCHMARK(BM_PlaceAllByNode_##policy)                                                        \
      ->Name("BM_PlaceAllByNode/" #policy)                                                     \
      ->Arg(1000)                                                                              \
      ->Arg(10000)                                                                             \
      ->Unit(benchmark::kMicrosecond);

#define TESSERA_STEADY_BENCH(policy)                                                             \
  void BM_PlaceAllSteady_##policy(benchmark::State& st) { RunSteady(st, #policy, true); }        \
  BENCHMARK(BM_PlaceAllSteady_##policy)                                                          \
      ->Name("BM_PlaceAllSteady/" #policy)                                                       \
      ->Arg(10000)                                                                               \
      ->Unit(benchmark::kMicrosecond);                                                           \
  void BM_PlaceAllSteadyByNode_##policy(benchmark::State& st) { RunSteady(st, #policy, false); } \
  BENCHMARK(BM_PlaceAllSteadyByNode_##policy)                                                    \
      ->Name("BM_PlaceAllSteadyByNode/" #policy)                                                 \
      ->Arg(10000)                                                                               \
      ->Unit(benchmark::kMicrosecond);

TESSERA_PLACE_BENCH(bestfit)
TESSERA_PLACE_BENCH(spread)
TESSERA_PLACE_BENCH(gpupacking)
TESSERA_PLACE_BENCH(dotproduct)
TESSERA_PLACE_BENCH(random)
TESSERA_PLACE_BENCH(fgd)
TESSERA_PLACE_BENCH(fragpack)
TESSERA_STEADY_BENCH(bestfit)
TESSERA_STEADY_BENCH(fgd)
TESSERA_STEADY_BENCH(fragpack)

BENCHMARK(BM_StateBytesPerNode)
    ->Arg(1000)
    ->Arg(10000)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(1);

}  // namespace
}  // namespace tessera::core
