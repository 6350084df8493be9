// The object store's reads: a kind listed now (List) and at a revision (ListAt, what a paged or
// exact list of the API reads), over an SQLite store of 10,000 Jobs (2 KiB bodies) whose log holds
// its 100,000 newest changes, a few of them after the revision read.
//   BM_StoreList/0: List; BM_StoreList/1: ListAt the latest revision but 10.
#include <benchmark/benchmark.h>

#include <filesystem>
#include <string>
#include <vector>

#include "store/store.h"

namespace tessera::store {
namespace {

void BM_StoreList(benchmark::State& st) {
  char tmpl[] = "/tmp/tessera-store-bench-XXXXXX";
  if (mkdtemp(tmpl) == nullptr) {
    st.SkipWithError("mkdtemp");
    return;
  }
  const std::string dir = tmpl;
  {
    auto s = OpenSqliteStore(dir + "/state.db");
    if (!s.ok()) {
      st.SkipWithError(s.status().message().c_str());
      return;
    }
    Store& store = **s;
    const std::string body(2048, 'x');
    constexpr int kJobs = 10'000;
    for (int round = 0; round < 11; ++round) {
      std::vector<Write> batch;
      for (int i = 0; i < kJobs; ++i) {
        batch.push_back({Write::Op::kPut,
                         {"Job", "ns-" + std::to_string(i % 10), "job-" + std::to_string(i)},
                         body + std::to_string(round),
                         {}});
        if (batch.size() == 1000) {
          (void)store.Commit(batch);
          batch.clear();
        }
      }
    }
    const int64_t at = store.Revision() - 10;
    for (auto _ : st) {
      auto list = st.range(0) == 0 ? store.List("Job", std::nullopt)
                                   : store.ListAt("Job", std::nullopt, at);
      if (!list.ok() || list->size() != kJobs) {
        st.SkipWithError("list");
        break;
      }
      benchmark::DoNotOptimize(list->data());
    }
  }
  std::filesystem::remove_all(dir);
}
BENCHMARK(BM_StoreList)->Arg(0)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace tessera::store
