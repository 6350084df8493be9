#include "sim/replay.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <set>

#include "core/admission.h"
#include "core/scheduler.h"
#include "core/workload.h"
#include "sim/parallel.h"

namespace tessera::sim {

namespace {

constexpr char kNamespace[] = "sim";
constexpr int64_t kForever = std::numeric_limits<int64_t>::max();

// One workload of the replay: a pod, or the members of a gang.
struct Job {
  core::Workload workload;
  int64_t arrival_s = 0;
  int64_t run_s = kForever;  // kForever: runs until the end
  int64_t first_admitted_s = -1;
  int64_t completed_s = -1;
};

int64_t RunTime(const TracePod& p) {
  if (p.deletion < 0) return kForever;
  const int64_t start = p.scheduled >= 0 ? p.scheduled : std::max<int64_t>(p.creation, 0);
  return std::max<int64_t>(p.deletion - start, 0);
}

int64_t ArrivalOf(const TracePod& p, double speedup) {
  return static_cast<int64_t>(
      std::llround(static_cast<double>(std::max<int64_t>(p.creation, 0)) / speedup));
}

std::string QueueOf(const TracePod& p) { return p.queue.empty() ? "default" : p.queue; }

// The workloads of the trace (gangs merged) and the queue configuration they need.
std::vector<Job> BuildJobs(std::span<const TracePod> pods, double speedup,
                           const core::ClusterState& cluster, core::QueueConfig* cfg) {
  std::vector<Job> jobs;
  std::map<std::string, size_t> gang_index;
  std::set<std::string> queues;
  std::set<int32_t> priorities;
  for (const TracePod& p : pods) {
    const std::string queue = QueueOf(p);
    queues.insert(queue);
    priorities.insert(p.priority);
    Job* job = nullptr;
    if (!p.gang.empty()) {
      auto [it, fresh] = gang_index.try_emplace(p.gang, jobs.size());
      if (!fresh) job = &jobs[it->second];
    }
    if (job == nullptr) {
      job = &jobs.emplace_back();
      job->workload.name = std::string(kNamespace) + "/" + (p.gang.empty() ? p.name : p.gang);
      job->workload.namespace_name = kNamespace;
      job->workload.local_queue = queue;
      job->workload.priority_class = "p" + std::to_string(p.priority);
      job->workload.min_member = p.gang.empty() ? 0 : p.gang_size;
      job->arrival_s = ArrivalOf(p, speedup);
      job->run_s = RunTime(p);
    } else {
      job->arrival_s = std::max(job->arrival_s, ArrivalOf(p, speedup));
      job->run_s = std::max(job->run_s, RunTime(p));
    }
    core::PodSet set;
    set.name = p.gang.empty() ? "pod" : p.name;
    set.pod = ToPodSpec(p);
    job->workload.pod_sets.push_back(std::move(set));
  }
  for (Job& j : jobs) {
    j.workload.created_ms = j.arrival_s * 1000;
    j.workload.estimated_runtime_ms = j.run_s == kForever ? 0 : j.run_s * 1000;
  }
  // One flavor for every node; each queue's nominal quota is the whole cluster, so quota never
  // binds, but preemption has a flavor to look for victims in.
  int64_t cpu = 0, memory = 0;
  for (size_t n = 0; n < cluster.size(); ++n) {
    const core::NodeRecord& node = cluster.node(core::NodeId(static_cast<uint32_t>(n)));
    cpu += node.allocatable.cpu_milli;
    memory += node.allocatable.memory_mib;
  }
  cfg->flavors.push_back({"default", {}, {}, {}, {}});
  core::ResourceGroup group;
  group.covered = {core::QuotaResource::kGpu, core::QuotaResource::kCpu,
                   core::QuotaResource::kMemory};
  group.flavors.push_back({"default",
                           {{core::QuotaResource::kGpu, cluster.total_gpu_milli(), {}, {}},
                            {core::QuotaResource::kCpu, cpu, {}, {}},
                            {core::QuotaResource::kMemory, memory, {}, {}}}});
  for (const std::string& q : queues) {
    core::QueueSpec spec;
    spec.name = q;
    spec.resource_groups.push_back(group);
    // Priorities matter within a queue: higher-priority work preempts lower.
    spec.preemption.within_queue = core::WithinQueuePreemption::kLowerPriority;
    cfg->queues.push_back(spec);
    cfg->local_queues.push_back({kNamespace, q, q});
  }
  for (int32_t p : priorities) {
    core::PriorityClassSpec c;
    c.name = "p" + std::to_string(p);
    c.value = p;
    cfg->priority_classes.push_back(c);
  }
  return jobs;
}

}  // namespace

Percentiles PercentilesOf(std::vector<double>& values) {
  Percentiles p;
  p.count = static_cast<int64_t>(values.size());
  if (values.empty()) return p;
  std::sort(values.begin(), values.end());
  double sum = 0;
  for (double v : values) sum += v;
  p.mean = sum / static_cast<double>(values.size());
  auto rank = [&](double q) {
    const size_t k = static_cast<size_t>(std::ceil(q * static_cast<double>(values.size())));
    return values[std::clamp<size_t>(k, 1, values.size()) - 1];
  };
  p.p50 = rank(0.5);
  p.p90 = rank(0.9);
  p.p99 = rank(0.99);
  p.max = values.back();
  return p;
}

namespace {

// The running state of one replay: the cluster, what runs, what waits and when each run ends.
struct EventLoop {
  EventLoop(core::Scheduler& placer, const core::AdmissionCycle& cycle, std::vector<Job>& jobs,
            const core::ClusterState& base, ReplayRun& run)
      : placer(placer),
        cycle(cycle),
        jobs(jobs),
        state(base),
        run(run),
        completion_of(jobs.size()) {}

  core::Scheduler& placer;
  const core::AdmissionCycle& cycle;
  std::vector<Job>& jobs;
  core::ClusterState state;
  ReplayRun& run;
  std::vector<size_t> waiting;  // jobs not running, in arrival order
  std::vector<core::AdmittedWorkload> running;
  std::vector<size_t> running_job;             // parallel to `running`
  std::multimap<int64_t, size_t> completions;  // time -> job
  std::vector<std::multimap<int64_t, size_t>::iterator> completion_of;
  std::vector<core::Reservation> held;

  // Takes running entry `r` off the cluster; returns its job.
  Result<size_t> Stop(size_t r) {
    for (const std::optional<core::Placement>& p : running[r].placements) {
      if (p) TESSERA_RETURN_IF_ERROR(state.Release(*p));
    }
    const size_t j = running_job[r];
    running.erase(running.begin() + static_cast<std::ptrdiff_t>(r));
    running_job.erase(running_job.begin() + static_cast<std::ptrdiff_t>(r));
    return j;
  }

  // Ends the runs due at `now`; says whether any did.
  Result<bool> Complete(int64_t now) {
    bool freed = false;
    while (!completions.empty() && completions.begin()->first == now) {
      const size_t j = completions.begin()->second;
      completions.erase(completions.begin());
      const auto r = std::find(running_job.begin(), running_job.end(), j) - running_job.begin();
      TESSERA_RETURN_IF_ERROR(Stop(static_cast<size_t>(r)).status());
      jobs[j].completed_s = now;
      ++run.completed;
      freed = true;
    }
    return freed;
  }

  // One admission cycle over `candidates` at `now`: victims go back to waiting (they start over
  // when admitted again), admitted jobs start. Says whether anything was preempted.
  Result<bool> Cycle(const std::vector<size_t>& candidates, int64_t now) {
    std::vector<core::Workload> pending;
    pending.reserve(candidates.size());
    for (size_t j : candidates) pending.push_back(jobs[j].workload);
    core::CycleResult result = cycle.Run(placer, state, pending, running, now * 1000, held);
    ++run.cycles;
    held = result.reservations;
    std::vector<size_t> victims;
    for (const core::Preemption& p : result.preemptions) victims.push_back(p.running_index);
    std::sort(victims.rbegin(), victims.rend());
    for (size_t r : victims) {
      auto j = Stop(r);
      if (!j.ok()) return j.status();
      if (jobs[*j].run_s != kForever) completions.erase(completion_of[*j]);
      waiting.push_back(*j);
      ++run.preemptions;
    }
    std::set<size_t> admitted;
    for (const core::Admission& a : result.admissions) {
      const size_t j = candidates[a.pending_index];
      for (const std::optional<core::Placement>& p : a.admitted.placements) {
        if (p) TESSERA_RETURN_IF_ERROR(state.Allocate(*p));
      }
      running.push_back(a.admitted);
      running_job.push_back(j);
      if (jobs[j].first_admitted_s < 0) {
        jobs[j].first_admitted_s = now;
        ++run.admitted;
      }
      if (jobs[j].run_s != kForever) completion_of[j] = completions.emplace(now + jobs[j].run_s, j);
      admitted.insert(j);
    }
    if (!admitted.empty()) std::erase_if(waiting, [&](size_t j) { return admitted.contains(j); });
    return !result.preemptions.empty();
  }
};

// Allocation over time, a step function through the changes ((time, allocated milli) after each
// event), over the arrival window (first to last arrival: the tail of long runs after the last
// arrival says nothing of the load).
void SummarizeAllocation(const std::vector<std::pair<int64_t, int64_t>>& changes, int64_t t0,
                         int64_t last_arrival, int64_t capacity, int samples, ReplayRun& run) {
  run.span_s = last_arrival - t0;
  double weighted = 0;
  for (size_t i = 0; i < changes.size() && changes[i].first <= last_arrival; ++i) {
    const int64_t until =
        i + 1 < changes.size() ? std::min(changes[i + 1].first, last_arrival) : last_arrival;
    weighted +=
        static_cast<double>(changes[i].second) * static_cast<double>(until - changes[i].first);
    run.peak_alloc_pct =
        std::max(run.peak_alloc_pct, 100.0 * static_cast<double>(changes[i].second) / capacity);
  }
  run.mean_alloc_pct = run.span_s > 0 ? 100.0 * weighted / run.span_s / capacity
                                      : (changes.empty() ? 0 : run.peak_alloc_pct);
  size_t c = 0;
  int64_t alloc = 0;
  for (int k = 0; k < samples; ++k) {
    const int64_t at = t0 + run.span_s * k / (samples - 1);
    while (c < changes.size() && changes[c].first <= at) alloc = changes[c++].second;
    run.alloc_pct.emplace_back(at - t0, 100.0 * static_cast<double>(alloc) / capacity);
  }
}

// Queueing delay and completion time per job.
void SummarizeDelays(const std::vector<Job>& jobs, ReplayRun& run) {
  std::vector<double> delay, jct;
  for (const Job& j : jobs) {
    if (j.first_admitted_s >= 0) {
      delay.push_back(static_cast<double>(j.first_admitted_s - j.arrival_s));
    }
    if (j.completed_s >= 0) jct.push_back(static_cast<double>(j.completed_s - j.arrival_s));
  }
  run.never_admitted = run.workloads - run.admitted;
  run.queue_delay_s = PercentilesOf(delay);
  run.jct_s = PercentilesOf(jct);
}

}  // namespace

Result<ReplayRun> RunReplay(const Trace& trace, const core::ClusterState& base,
                            std::span<const core::TaskType> workload, const ReplayConfig& config) {
  const auto started = std::chrono::steady_clock::now();
  if (config.samples < 2) return InvalidArgument("samples must be at least 2");
  if (!(config.speedup >= 1e-3 && config.speedup <= 1e6)) {
    return InvalidArgument("speedup must be in [0.001, 1000000]");
  }
  core::SchedulerConfig sc;
  sc.policy = config.policy;
  sc.seed = config.seed;
  sc.fgd_workload.assign(workload.begin(), workload.end());
  auto placer = core::Scheduler::Create(sc);
  if (!placer.ok()) return placer.status();
  core::QueueConfig cfg;
  std::vector<Job> jobs = BuildJobs(trace.pods, config.speedup, base, &cfg);
  core::CycleOptions options;
  options.fair_sharing = config.fair_sharing;
  options.backfill = config.backfill;
  auto cycle = core::AdmissionCycle::Create(cfg, options);
  if (!cycle.ok()) return cycle.status();
  const int64_t capacity = base.total_gpu_milli();
  if (capacity == 0) return InvalidArgument("the cluster has no GPUs");

  // Arrival order: time, then trace order.
  std::vector<size_t> order(jobs.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return jobs[a].arrival_s < jobs[b].arrival_s; });

  ReplayRun run;
  run.policy = config.policy;
  run.workloads = static_cast<int64_t>(jobs.size());
  EventLoop loop(**placer, *cycle, jobs, base, run);
  std::vector<std::pair<int64_t, int64_t>> changes;  // (time, allocated milli) after each event
  size_t next_arrival = 0;
  for (;;) {
    const int64_t next_a =
        next_arrival < order.size() ? jobs[order[next_arrival]].arrival_s : kForever;
    const int64_t next_c = loop.completions.empty() ? kForever : loop.completions.begin()->first;
    const int64_t now = std::min(next_a, next_c);
    if (now == kForever) break;
    // Completions first: what ends now frees room for what arrives now.
    auto freed = loop.Complete(now);
    if (!freed.ok()) return freed.status();
    std::vector<size_t> fresh;
    while (next_arrival < order.size() && jobs[order[next_arrival]].arrival_s == now) {
      fresh.push_back(order[next_arrival++]);
    }
    // The cycle's pending list: everything waiting after a completion, else the arrivals.
    loop.waiting.insert(loop.waiting.end(), fresh.begin(), fresh.end());
    // Preemption frees room for the preemptor in the next cycle: run again at the same time.
    for (bool all = *freed; all || !fresh.empty(); fresh.clear()) {
      const std::vector<size_t> candidates = all ? loop.waiting : fresh;
      if (candidates.empty()) break;
      auto preempted = loop.Cycle(candidates, now);
      if (!preempted.ok()) return preempted.status();
      all = *preempted;
    }
    changes.emplace_back(now, loop.state.allocated_gpu_milli());
  }
  const int64_t t0 = order.empty() ? 0 : jobs[order.front()].arrival_s;
  const int64_t last_arrival = order.empty() ? t0 : jobs[order.back()].arrival_s;
  SummarizeAllocation(changes, t0, last_arrival, capacity, config.samples, run);
  SummarizeDelays(jobs, run);
  run.wall_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return run;
}

Result<std::vector<ReplayRun>> RunReplays(const Trace& trace, std::span<const std::string> policies,
                                          const ReplayConfig& config, int jobs) {
  auto base = BuildCluster(trace.nodes);
  if (!base.ok()) return base.status();
  const std::vector<core::TaskType> workload = TraceWorkload(trace.pods);
  std::vector<ReplayRun> runs(policies.size());
  TESSERA_RETURN_IF_ERROR(ParallelFor(runs.size(), jobs, [&](size_t k) {
    ReplayConfig c = config;
    c.policy = policies[k];
    auto r = RunReplay(trace, *base, workload, c);
    if (!r.ok()) return r.status();
    runs[k] = std::move(*r);
    return Status::Ok();
  }));
  return runs;
}

}  // namespace tessera::sim
