// The queue layer's admission cycle at fleet scale.
//
//   BM_AdmissionCycle/<nodes>/<pending>/<churn>/<fair>: one AdmissionCycle::Run per iteration.
//   The cluster is <nodes> 8-GPU nodes in four pools (bench_fleet.h), one flavor per pool. 100
//   queues in 10 cohorts each hold 1/100 of every pool as nominal GPU quota (borrowing allowed,
//   within-queue and reclaim preemption of lower priority; <fair> 1: Kueue's fair sharing, 0:
//   its classic preemption, the default). A setup cycle fills the
//   cluster from a deep backlog; two more cycles over <pending> workloads (spread over the
//   queues; request shapes of bench_fleet.h, one in ten a 4-pod gang, one in twenty of high
//   priority) admit what fits, preempt for the high-priority ones and admit those, the backlog
//   topped up to <pending> before each. Then <churn> per mille of the running workloads finish
//   and the timed cycle runs from there: a steady state with a deep backlog.
//   Counters: admissions, preemptions, reservations, gang placements tried, placement
//   failures reused and waiting workloads given an equal one's verdict in the timed cycle.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "bench_fleet.h"
#include "core/admission.h"
#include "core/scheduler.h"

namespace tessera::core {
namespace {

constexpr int kQueues = 100;
constexpr int kCohorts = 10;

QueueConfig MakeQueues(int nodes) {
  QueueConfig cfg;
  const char* pools[] = {"H100-80GB", "A100-80GB", "A10", "T4"};
  for (const char* model : pools) {
    ResourceFlavor f;
    f.name = model;
    f.node_labels = {{"nvidia.com/gpu.product", model}};
    if (std::string(model) == "H100-80GB") {
      f.tolerations.push_back(
          {"nvidia.com/gpu", TolerationOp::kExists, "", true, TaintEffect::kNoSchedule});
    }
    cfg.flavors.push_back(f);
  }
  for (int c = 0; c < kCohorts; ++c)
    cfg.cohorts.push_back({"cohort-" + std::to_string(c), "", {}, 1000});
  const int64_t per_queue = static_cast<int64_t>(nodes) / 4 * 8 * kMilliPerGpu / kQueues;
  for (int q = 0; q < kQueues; ++q) {
    QueueSpec spec;
    spec.name = "q" + std::to_string(q);
    spec.cohort = "cohort-" + std::to_string(q % kCohorts);
    ResourceGroup g;
    g.covered = {QuotaResource::kGpu};
    for (const ResourceFlavor& f : cfg.flavors) {
      g.flavors.push_back({f.name, {{QuotaResource::kGpu, per_queue, std::nullopt, std::nullopt}}});
    }
    spec.resource_groups = {g};
    spec.preemption.within_queue = WithinQueuePreemption::kLowerPriority;
    spec.preemption.reclaim_within_cohort = ReclaimPreemption::kLowerPriority;
    cfg.queues.push_back(spec);
    cfg.local_queues.push_back({"ns-" + std::to_string(q), "main", spec.name});
  }
  cfg.priority_classes = {{"normal", 10, PreemptionPolicyKind::kPreemptLowerPriority, true},
                          {"high", 100, PreemptionPolicyKind::kPreemptLowerPriority, false}};
  return cfg;
}

std::vector<Workload> MakeWorkloads(int count, int64_t first_id, bool with_high) {
  const std::vector<PodSpec> shapes = MakePods();
  std::vector<Workload> out;
  out.reserve(count);
  for (int i = 0; i < count; ++i) {
    const int64_t id = first_id + i;
    const int q = static_cast<int>(id % kQueues);
    Workload w;
    w.namespace_name = "ns-" + std::to_string(q);
    w.name = w.namespace_name + "/w" + std::to_string(id);
    w.local_queue = "main";
    w.created_ms = id;
    w.estimated_runtime_ms = 60'000 * (1 + id % 30);
    if (with_high && id % 20 == 3) w.priority_class = "high";
    PodSpec pod = shapes[(id / kQueues) % shapes.size()];
    if (id % 10 == 0) {
      // A small training gang: 4 one-GPU workers that tolerate the training taint.
      pod = shapes[8];
      w.pod_sets.push_back({"worker", pod, 4});
    } else {
      w.pod_sets.push_back({"main", pod, 1});
    }
    out.push_back(std::move(w));
  }
  return out;
}

void BM_AdmissionCycle(benchmark::State& st) {
  const int nodes = static_cast<int>(st.range(0));
  const int pending_count = static_cast<int>(st.range(1));
  const int churn_permille = static_cast<int>(st.range(2));
  ClusterState state = MakeCluster(nodes);
  CycleOptions options;
  options.fair_sharing = st.range(3) != 0;
  AdmissionCycle cycle = AdmissionCycle::Create(MakeQueues(nodes), options).value();
  SchedulerConfig sc;
  sc.policy = "bestfit";
  auto placer = Scheduler::Create(sc).value();

  // Setup: fill the cluster from a backlog larger than it, then run one cycle over the
  // pending workloads so that the timed cycle starts from a steady state (what fits of them
  // already runs, preemptions done), then let some running work finish.
  std::vector<AdmittedWorkload> running;
  auto apply = [&](CycleResult r, std::vector<Workload>& pending) {
    std::vector<uint8_t> gone(running.size(), 0);
    for (const Preemption& p : r.preemptions) gone[p.running_index] = 1;
    std::vector<AdmittedWorkload> kept;
    for (size_t i = 0; i < running.size(); ++i) {
      if (!gone[i]) {
        kept.push_back(std::move(running[i]));
        continue;
      }
      for (const std::optional<Placement>& p : running[i].placements) {
        if (p && !state.Release(*p).ok()) std::abort();
      }
    }
    std::vector<uint8_t> admitted(pending.size(), 0);
    for (Admission& a : r.admissions) {
      for (const std::optional<Placement>& p : a.admitted.placements) {
        if (p && !state.Allocate(*p).ok()) std::abort();
      }
      admitted[a.pending_index] = 1;
      kept.push_back(std::move(a.admitted));
    }
    running = std::move(kept);
    std::vector<Workload> left;
    for (size_t i = 0; i < pending.size(); ++i) {
      if (!admitted[i]) left.push_back(std::move(pending[i]));
    }
    pending = std::move(left);
  };
  std::vector<Workload> backlog = MakeWorkloads(nodes * 8, 0, false);
  apply(cycle.Run(*placer, state, backlog, {}, 0), backlog);
  std::vector<Workload> pending;
  int64_t next_id = nodes * 8;
  for (int warm = 0; warm < 3; ++warm) {
    // Top the backlog up to <pending> with newer workloads.
    const int missing = pending_count - static_cast<int>(pending.size());
    const std::vector<Workload> more = MakeWorkloads(missing, next_id, true);
    next_id += missing;
    pending.insert(pending.end(), more.begin(), more.end());
    if (warm < 2) apply(cycle.Run(*placer, state, pending, running, 500'000 + warm), pending);
  }
  // Some of the running work finishes, spread over the queues.
  std::vector<AdmittedWorkload> still;
  for (size_t i = 0; i < running.size(); ++i) {
    if (static_cast<int>((i * 7919) % 1000) < churn_permille) {
      for (const std::optional<Placement>& p : running[i].placements) {
        if (p && !state.Release(*p).ok()) std::abort();
      }
    } else {
      still.push_back(std::move(running[i]));
    }
  }
  running = std::move(still);
  st.counters["running"] = static_cast<double>(running.size());
  st.counters["alloc_pct"] =
      100.0 * static_cast<double>(state.allocated_gpu_milli()) / state.total_gpu_milli();

  CycleResult last;
  for (auto _ : st) {
    last = cycle.Run(*placer, state, pending, running, 1'000'000);
    benchmark::DoNotOptimize(last);
  }
  st.counters["admitted"] = static_cast<double>(last.admissions.size());
  st.counters["preempted"] = static_cast<double>(last.preemptions.size());
  st.counters["reserved"] = static_cast<double>(last.reservations.size());
  st.counters["placements"] = last.placement_attempts;
  st.counters["cache_hits"] = last.placement_cache_hits;
  st.counters["reused"] = last.reused_verdicts;
}

BENCHMARK(BM_AdmissionCycle)
    ->Args({1000, 10000, 1, 1})
    ->Args({10000, 100000, 0, 1})
    ->Args({10000, 100000, 1, 1})
    ->Args({10000, 100000, 20, 1})
    ->Args({1000, 10000, 1, 0})
    ->Args({10000, 100000, 1, 0})
    ->Unit(benchmark::kMillisecond)
    ->Iterations(3);

}  // namespace
}  // namespace tessera::core
BENCHMARK_MAIN();
