// Replay mode: a trace's pods arrive at their creation times, run for their traced durations and
// leave, while the queue layer (core/admission.h: queues, priorities, preemption, backfill) and the
// placement core decide, on a virtual clock, what runs where. Reports the GPU allocation over
// time, how long work queued and how long it took to complete.
//
// Per trace pod: arrival = creation time; run time = deletion - scheduled time (the time it ran in
// the traced cluster; creation when the trace has no scheduled time); no deletion: it runs until
// the end. Pods of one gang are one workload that arrives with its last member, needs gang_size
// of them placed together and runs for its longest member. Queue names become queues without
// quota (reached through local queues of the same name) where higher priority preempts lower,
// priorities become priority classes.
// The trace's run times are given to the queue layer as estimates, so backfill knows them.
//
// The clock moves from event to event (arrivals, completions). A cycle after arrivals only looks
// at the new work (older work waits for room, and arrivals add none; a higher-priority arrival
// still preempts); a cycle after completions looks at all waiting work, as Kueue requeues
// inadmissible workloads on cluster events.
#ifndef TESSERA_SIM_REPLAY_H_
#define TESSERA_SIM_REPLAY_H_

#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "core/cluster_state.h"
#include "core/fgd.h"
#include "core/status.h"
#include "sim/arrival.h"

namespace tessera::sim {

struct ReplayConfig {
  std::string policy = "bestfit";
  uint64_t seed = 42;  // for the random policy
  int samples = 100;   // points of allocation over time, evenly spread over the replay
  // Arrivals come this many times faster (times divided by it); run times stay: a what-if of a
  // busier cluster with the same work.
  double speedup = 1;
  bool fair_sharing = true;
  bool backfill = true;
};

struct Percentiles {
  int64_t count = 0;
  double mean = 0, p50 = 0, p90 = 0, p99 = 0, max = 0;
};
// Nearest-rank percentiles of `values` (sorted in place).
Percentiles PercentilesOf(std::vector<double>& values);

struct ReplayRun {
  std::string policy;
  // Over the arrival window (first to last arrival): (seconds since the first arrival, allocated
  // milli-GPUs / capacity in %) at `samples` evenly spread points, the time-weighted mean, the
  // peak.
  std::vector<std::pair<int64_t, double>> alloc_pct;
  double mean_alloc_pct = 0;
  double peak_alloc_pct = 0;
  int64_t workloads = 0;
  int64_t admitted = 0;  // admitted at least once
  int64_t completed = 0;
  int64_t never_admitted = 0;  // still waiting at the end
  int64_t preemptions = 0;
  Percentiles queue_delay_s;  // first admission - arrival, of admitted workloads
  Percentiles jct_s;          // completion - arrival, of completed workloads
  int64_t cycles = 0;
  int64_t span_s = 0;  // first to last arrival
  double wall_seconds = 0;
};

// Replays `trace` on `base` (the cluster built from trace.nodes) with one policy. `workload` is
// the trace's TraceWorkload (FGD's target).
Result<ReplayRun> RunReplay(const Trace& trace, const core::ClusterState& base,
                            std::span<const core::TaskType> workload, const ReplayConfig& config);

// One replay per policy on up to `jobs` threads, in policy order (identical to a serial run).
Result<std::vector<ReplayRun>> RunReplays(const Trace& trace, std::span<const std::string> policies,
                                          const ReplayConfig& config, int jobs);

}  // namespace tessera::sim

#endif  // TESSERA_SIM_REPLAY_H_
