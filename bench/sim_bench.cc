// One arrival-only simulator run, as `tessera sim --policy P --seeds 42 --jobs 1` does it.
//
//   BM_ArrivalRun/<trace>/<policy>: a whole run (seed 42, 130% arrived demand) on a bundled
//   Alibaba trace, the cluster built and every pod placed through the scheduling core; the
//   target is under a second per run. The traces are read once, outside the timed region.
#include <benchmark/benchmark.h>

#include <map>
#include <string>

#include "sim/arrival.h"
#include "sim/trace.h"

namespace {

const tessera::sim::Trace& LoadTrace(const std::string& name) {
  static std::map<std::string, tessera::sim::Trace> traces;
  auto it = traces.find(name);
  if (it == traces.end()) {
    const std::string dir = std::string(TESSERA_DATA_DIR) + "/traces/alibaba-gpu-v2023/";
    tessera::sim::Trace t;
    t.name = name;
    t.nodes = *tessera::sim::LoadNodes(dir + "openb_node_list_gpu_node.csv");
    t.pods = *tessera::sim::LoadPods(dir + "openb_pod_list_" + name + ".csv");
    it = traces.emplace(name, std::move(t)).first;
  }
  return it->second;
}

void BM_ArrivalRun(benchmark::State& state, const std::string& trace, const std::string& policy) {
  const tessera::sim::Trace& t = LoadTrace(trace);
  const auto workload = tessera::sim::TraceWorkload(t.pods);
  tessera::sim::ArrivalConfig config;
  config.policy = policy;
  config.seed = 42;
  double alloc = 0;
  for (auto _ : state) {
    auto run = tessera::sim::RunArrival(t, workload, config);
    if (!run.ok()) {
      state.SkipWithError(run.status().message().c_str());
      return;
    }
    alloc = run->alloc_pct[100];
  }
  state.counters["alloc_at_100"] = alloc;
}

}  // namespace

// clang-format off
BENCHMARK_CAPTURE(BM_ArrivalRun, default/fgd, "default", "fgd")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_ArrivalRun, default/fragpack, "default", "fragpack")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_ArrivalRun, gpuspec10/fragpack, "gpuspec10", "fragpack")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_ArrivalRun, gpuspec20/fgd, "gpuspec20", "fgd")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_ArrivalRun, gpuspec20/fragpack, "gpuspec20", "fragpack")->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_ArrivalRun, cpu250/fragpack, "cpu250", "fragpack")->Unit(benchmark::kMillisecond);
// clang-format on
