// The object store's reads: a kind listed now (List) and at a revision (ListAt, what a paged or
// exact list of the API reads), over an SQLite store of 10,000 Jobs (2 KiB bodies) whose log holds
// its 100,000 newest changes, a few of them after the revision read.
//   BM_StoreList/0: List; BM_StoreList/1: ListAt the latest revision but 10.
// And one writer's creations on etcd (one member of Debian's etcd, started by the benchmark), one
// at a time: BM_EtcdCreate/0 a bare transaction of the client (a put under mod_revision == 0, as
// a creation sends), BM_EtcdCreate/1 Store::Commit of a create (the same transaction, the group
// commit, and the watch bringing it to the store's cache). What one API client's creations on
// etcd can reach.
#include <benchmark/benchmark.h>

#include <ctime>
#include <filesystem>
#include <string>
#include <vector>

#include "store/etcd_client.h"
#include "store/etcd_fixture.h"
#include "store/etcd_store.h"
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

void BM_EtcdCreate(benchmark::State& st) {
  auto options = ParseEtcdUrl(TestEtcdUrl());
  if (!SharedEtcd().ready() || !options.ok()) {
    st.SkipWithError("etcd did not start");
    return;
  }
  const std::string body(1200, 'x');
  int64_t n = 0;
  if (st.range(0) == 0) {
    EtcdClient client(*options);
    for (auto _ : st) {
      const std::string key = options->prefix + "Job/bench/j" + std::to_string(n++);
      auto r = client.Call("kv/txn",
                           {{"compare", {EtcdModIs(key, 0)}}, {"success", {EtcdPut(key, body)}}});
      if (!r.ok()) {
        st.SkipWithError(r.status().message().c_str());
        return;
      }
    }
  } else {
    auto store = OpenEtcdStore({.etcd = *options});
    if (!store.ok()) {
      st.SkipWithError(store.status().message().c_str());
      return;
    }
    for (auto _ : st) {
      const Write w{Write::Op::kCreate, {"Job", "bench", "j" + std::to_string(n++)}, body, {}};
      auto r = (*store)->Commit(std::span<const Write>(&w, 1));
      if (!r.ok() || !(*store)->ChangesAfter((*r)[0] - 1, 1).ok()) {
        st.SkipWithError("commit");
        return;
      }
    }
  }
  st.SetItemsProcessed(n);
}
BENCHMARK(BM_EtcdCreate)
    ->Arg(0)
    ->Arg(1)
    ->Iterations(2000)
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

}  // namespace
}  // namespace tessera::store
