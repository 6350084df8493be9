// Arrival-only simulation, the method of the FGD paper (Weng et al., ATC'23): pods sampled from a
// trace arrive one by one and are never deleted; the GPU allocation ratio and fragmentation are
// recorded as functions of the arrived GPU demand. Every placement goes through the scheduling
// core exactly as the server's would.
#ifndef TESSERA_SIM_ARRIVAL_H_
#define TESSERA_SIM_ARRIVAL_H_

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/cluster_state.h"
#include "core/fgd.h"
#include "core/status.h"
#include "sim/trace.h"

namespace tessera::sim {

// A cluster and the pods to sample from.
struct Trace {
  std::string name;  // e.g. openb_pod_list_default
  std::vector<core::NodeSpec> nodes;
  std::vector<TracePod> pods;
};

struct ArrivalConfig {
  std::string policy = "fgd";
  uint64_t seed = 42;
  // Stop sampling once the arrived GPU demand reaches inflate x the cluster's GPU capacity.
  double inflate = 1.3;
  // kube-scheduler's percentageOfNodesToScore; the paper's simulator scores every node.
  int percentage_of_nodes_to_score = 100;
  // Nodes join the cluster in the order NodeOrder(nodes, seed) gives, and the core breaks ties
  // between equal scores by node id, so this order is the tie-break order. The paper's simulator
  // does the same: it prefixes every node's name with its index in a random permutation, and its
  // kube-scheduler takes the lexicographically first name among equal scores. false keeps the
  // trace's order.
  bool shuffle_nodes = true;
};

// One run (one policy, one seed).
struct ArrivalRun {
  std::string policy;
  uint64_t seed = 0;
  // Index k: the state when the arrived GPU demand first reached k% of the GPU capacity,
  // k = 0 .. floor(100 x inflate).
  std::vector<double> alloc_pct;  // allocated milli-GPUs / capacity, in %
  std::vector<double> frag_pct;   // fragmented / unallocated GPU capacity, in %
  std::vector<double> frag_gpus;  // fragmented GPU capacity, in GPUs
  int64_t arrived_pods = 0;
  int64_t placed_pods = 0;
  int64_t failed_pods = 0;
  int64_t failed_gpu_milli = 0;  // GPU demand of the failed pods
  double wall_seconds = 0;
};

// The target workload of a trace, the FGD paper's typical pods: one task type per distinct pod
// shape, weighted by its number of pods, the most popular covering kTypicalCoveragePercent of
// the pods. FGD and fragpack aim at it and the fragmentation measure is taken against it.
std::vector<core::TaskType> TraceWorkload(std::span<const TracePod> pods);

// The pods that arrive in a run: sampled uniformly with replacement from `pods` with a
// generator seeded by `seed` until their GPU demand reaches `target_milli`, then shuffled.
// Returns indices into `pods`.
std::vector<uint32_t> SampleArrivals(std::span<const TracePod> pods, uint64_t seed,
                                     int64_t target_milli);

// The order in which a run's nodes join the cluster: a permutation of 0 .. nodes - 1 drawn
// uniformly with a generator seeded from `seed` (a stream apart from SampleArrivals').
std::vector<uint32_t> NodeOrder(size_t nodes, uint64_t seed);

// Runs one policy with one seed on the cluster of trace.nodes (in NodeOrder when
// config.shuffle_nodes). `workload` is the trace's TraceWorkload.
Result<ArrivalRun> RunArrival(const Trace& trace, std::span<const core::TaskType> workload,
                              const ArrivalConfig& config);

// Runs every (policy, seed) pair on up to `jobs` threads. Results come in (policy, seed) order and
// are identical to a serial run.
Result<std::vector<ArrivalRun>> RunArrivals(const Trace& trace,
                                            std::span<const std::string> policies,
                                            std::span<const uint64_t> seeds,
                                            const ArrivalConfig& config, int jobs);

// Means over the runs of one policy.
struct ArrivalSummary {
  std::string policy;
  int seeds = 0;
  std::vector<double> alloc_pct;
  std::vector<double> frag_pct;
  std::vector<double> frag_gpus;
  double failed_pods = 0;
  double wall_seconds = 0;  // sum over the runs
};

std::vector<ArrivalSummary> Summarize(std::span<const ArrivalRun> runs);

}  // namespace tessera::sim

#endif  // TESSERA_SIM_ARRIVAL_H_
