// The API's own work on large inputs: a strategic merge patch of long lists (keyed lists,
// $setElementOrder, $deleteFromPrimitiveList), whose cost must grow as n log n with the lists'
// length n (keyed lookups), not with its square (a pairwise scan). Google Benchmark fits the
// growth (BM_StrategicMergeLongLists_BigO and _RMS).
#include <benchmark/benchmark.h>

#include "api/list_patch.h"
#include "api/patch.h"

namespace tessera::api {
namespace {

void BM_StrategicMergeLongLists(benchmark::State& state) {
  nlohmann::json target;
  const nlohmann::json patch = ListPatch(static_cast<size_t>(state.range(0)), &target);
  for (auto _ : state) {
    Result<nlohmann::json> r = ApplyPatch(target, patch, PatchType::kStrategicMerge);
    if (!r.ok()) state.SkipWithError(r.status().message().c_str());
    benchmark::DoNotOptimize(r);
  }
  state.SetComplexityN(state.range(0));
}
BENCHMARK(BM_StrategicMergeLongLists)
    ->RangeMultiplier(2)
    ->Range(5'000, 40'000)
    ->Complexity()
    ->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace tessera::api
