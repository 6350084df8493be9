#include "sim/arrival.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <memory>
#include <mutex>

#include "core/fgd.h"
#include "core/scheduler.h"
#include "sim/parallel.h"

namespace tessera::sim {

namespace {

// SplitMix64: small, fast and fully specified, so a seed means the same run everywhere.
class Rng {
 public:
  explicit Rng(uint64_t seed) : state_(seed) {}
  uint64_t Next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  // Uniform in [0, n), n > 0, without modulo bias.
  uint64_t Below(uint64_t n) {
    const uint64_t limit = UINT64_MAX - UINT64_MAX % n;
    uint64_t x = Next();
    while (x >= limit) x = Next();
    return x % n;
  }

 private:
  uint64_t state_;
};

}  // namespace

std::vector<core::TaskType> TraceWorkload(std::span<const TracePod> pods) {
  core::TaskTypeCounter counter;
  for (const TracePod& p : pods) counter.Add(ToPodSpec(p));
  // Most popular first; TypicalTaskTypes sorts stably, so the counter's key order breaks ties and
  // the result is deterministic.
  return core::TypicalTaskTypes(counter.Types(), core::kTypicalCoveragePercent);
}

std::vector<uint32_t> SampleArrivals(std::span<const TracePod> pods, uint64_t seed,
                                     int64_t target_milli) {
  std::vector<uint32_t> out;
  int64_t any_gpu = 0;
  for (const TracePod& p : pods) any_gpu += p.GpuDemandMilli();
  if (pods.empty() || any_gpu == 0) return out;
  Rng rng(seed);
  int64_t demand = 0;
  while (demand < target_milli) {
    const auto i = static_cast<uint32_t>(rng.Below(pods.size()));
    out.push_back(i);
    demand += pods[i].GpuDemandMilli();
  }
  for (size_t i = out.size(); i > 1; --i) std::swap(out[i - 1], out[rng.Below(i)]);
  return out;
}

std::vector<uint32_t> NodeOrder(size_t nodes, uint64_t seed) {
  std::vector<uint32_t> order(nodes);
  for (size_t i = 0; i < nodes; ++i) order[i] = static_cast<uint32_t>(i);
  Rng rng(~seed);  // SampleArrivals draws from the stream seeded with `seed` itself
  for (size_t i = nodes; i > 1; --i) std::swap(order[i - 1], order[rng.Below(i)]);
  return order;
}

Result<ArrivalRun> RunArrival(const Trace& trace, std::span<const core::TaskType> workload,
                              const ArrivalConfig& config) {
  const auto start = std::chrono::steady_clock::now();
  if (!(config.inflate > 0) || config.inflate > 100) {
    return InvalidArgument("inflate must be in (0, 100]");
  }
  core::SchedulerConfig sc;
  sc.policy = config.policy;
  sc.seed = config.seed;
  sc.percentage_of_nodes_to_score = config.percentage_of_nodes_to_score;
  sc.fgd_workload.assign(workload.begin(), workload.end());
  sc.diagnose_failures = false;  // a failed pod's reason is not read
  auto sched = core::Scheduler::Create(sc);
  if (!sched.ok()) return sched.status();
  std::vector<core::NodeSpec> nodes;
  if (config.shuffle_nodes) {
    nodes.reserve(trace.nodes.size());
    for (uint32_t i : NodeOrder(trace.nodes.size(), config.seed)) nodes.push_back(trace.nodes[i]);
  }
  auto built = BuildCluster(config.shuffle_nodes ? nodes : trace.nodes);
  if (!built.ok()) return built.status();
  core::ClusterState& state = *built;
  const int64_t capacity = state.total_gpu_milli();
  if (capacity == 0) return InvalidArgument("the cluster has no GPUs");
  const auto target = static_cast<int64_t>(std::ceil(config.inflate * capacity));
  const std::vector<uint32_t> arrivals = SampleArrivals(trace.pods, config.seed, target);
  if (arrivals.empty()) return InvalidArgument("the pod list has no GPU demand");
  std::vector<core::PodSpec> specs;
  specs.reserve(trace.pods.size());
  for (const TracePod& p : trace.pods) specs.push_back(ToPodSpec(p));

  core::FragmentationMemo memo({workload.begin(), workload.end()});
  const int64_t weight = memo.total_weight();
  std::vector<int64_t> node_frag(state.size());
  int64_t frag = 0;  // milli-GPU x weight
  auto refresh = [&](core::NodeId id) {
    const int64_t f = memo.Get(core::MakeFragNode(state, id));
    frag += f - node_frag[id.value()];
    node_frag[id.value()] = f;
  };
  for (uint32_t n = 0; n < state.size(); ++n) refresh(core::NodeId(n));

  ArrivalRun run;
  run.policy = config.policy;
  run.seed = config.seed;
  const int max_pct = static_cast<int>(std::floor(config.inflate * 100 + 1e-9));
  auto record = [&] {
    const int64_t allocated = state.allocated_gpu_milli();
    const int64_t free = capacity - allocated;
    const double frag_milli = weight > 0 ? static_cast<double>(frag) / weight : 0.0;
    run.alloc_pct.push_back(100.0 * allocated / capacity);
    run.frag_gpus.push_back(frag_milli / core::kMilliPerGpu);
    run.frag_pct.push_back(free > 0 ? 100.0 * frag_milli / free : 0.0);
  };
  record();
  int64_t arrived = 0;
  for (uint32_t i : arrivals) {
    const TracePod& pod = trace.pods[i];
    core::PlaceOutcome o = (*sched)->Schedule(state, specs[i]);
    ++run.arrived_pods;
    if (o.ok) {
      ++run.placed_pods;
      refresh(o.placement.node);
    } else {
      ++run.failed_pods;
      run.failed_gpu_milli += pod.GpuDemandMilli();
    }
    arrived += pod.GpuDemandMilli();
    while (static_cast<int>(run.alloc_pct.size()) <= max_pct &&
           arrived * 100 >= static_cast<int64_t>(run.alloc_pct.size()) * capacity) {
      record();
    }
  }
  run.wall_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return run;
}

Result<std::vector<ArrivalRun>> RunArrivals(const Trace& trace,
                                            std::span<const std::string> policies,
                                            std::span<const uint64_t> seeds,
                                            const ArrivalConfig& config, int jobs) {
  const std::vector<core::TaskType> workload = TraceWorkload(trace.pods);
  std::vector<ArrivalRun> runs(policies.size() * seeds.size());
  TESSERA_RETURN_IF_ERROR(ParallelFor(runs.size(), jobs, [&](size_t k) {
    ArrivalConfig c = config;
    c.policy = policies[k / seeds.size()];
    c.seed = seeds[k % seeds.size()];
    auto r = RunArrival(trace, workload, c);
    if (!r.ok()) return r.status();
    runs[k] = std::move(*r);
    return Status::Ok();
  }));
  return runs;
}

std::vector<ArrivalSummary> Summarize(std::span<const ArrivalRun> runs) {
  std::vector<ArrivalSummary> out;
  auto add = [](std::vector<double>& sum, const std::vector<double>& v) {
    if (sum.size() < v.size()) sum.resize(v.size(), 0.0);
    for (size_t i = 0; i < v.size(); ++i) sum[i] += v[i];
  };
  for (const ArrivalRun& r : runs) {
    auto it = std::find_if(out.begin(), out.end(),
                           [&](const ArrivalSummary& s) { return s.policy == r.policy; });
    if (it == out.end()) {
      out.push_back({});
      it = out.end() - 1;
      it->policy = r.policy;
    }
    ++it->seeds;
    add(it->alloc_pct, r.alloc_pct);
    add(it->frag_pct, r.frag_pct);
    add(it->frag_gpus, r.frag_gpus);
    it->failed_pods += static_cast<double>(r.failed_pods);
    it->wall_seconds += r.wall_seconds;
  }
  for (ArrivalSummary& s : out) {
    for (auto* v : {&s.alloc_pct, &s.frag_pct, &s.frag_gpus}) {
      for (double& x : *v) x /= s.seeds;
    }
    s.failed_pods /= s.seeds;
  }
  return out;
}

}  // namespace tessera::sim
