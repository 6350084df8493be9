// An upper bound on the GPU allocation of arrival-only runs: however pods are placed, no policy
// that sees them one by one (nor any offline packing of the same pods) allocates more.
//
// The bound is the optimum of a linear relaxation of packing the arrived pods, solved with GLPK:
// pods are grouped by shape (CPU, memory, cards, share size, accepted models) and nodes by class
// (CPU, memory, card count, model, whether cards take shares); y[t][k] is how many pods of shape t
// go to nodes of class k, at most the number of arrived pods of shape t. Per node class, the
// pods' CPU and memory fit the class's total, and a family of dual-feasible functions turns the
// per-card and per-node packing into valid linear cuts: a share above 1000 - e counts as a whole
// card when every share below e can then only fill what is left of it (the 810-milli share with
// 190 free), shares are rounded to halves, thirds, ... of a card (two 470s cannot take a third),
// and a pod of more than half a node's cards or CPU leaves room for no other such pod. The
// maximum allocated GPU milli under these constraints is at least what any placement reaches.
#ifndef TESSERA_SIM_BOUND_H_
#define TESSERA_SIM_BOUND_H_

#include <cstdint>
#include <span>
#include <vector>

#include "core/node.h"
#include "core/status.h"
#include "sim/arrival.h"
#include "sim/trace.h"

namespace tessera::sim {

// The most GPU milli any placement of `pods` (all of them, or any subset) on `nodes` can
// allocate, from the relaxation above; never below the true optimum.
Result<int64_t> AllocationBoundMilli(std::span<const core::NodeSpec> nodes,
                                     std::span<const TracePod> pods);

// For one seed of an arrival-only run (the pods SampleArrivals draws for `inflate`, in arrival
// order), the bound on the allocation in % of the GPU capacity at each arrived-demand point of
// `at_pct`, ascending (the same points as ArrivalRun::alloc_pct: the state once the arrived
// demand first reaches that % of the capacity, or all arrivals when it never does).
Result<std::vector<double>> ArrivalBoundPct(const Trace& trace, uint64_t seed, double inflate,
                                            std::span<const int> at_pct);

// The bound over several seeds at 100% arrived demand (or the last point when inflate < 1) and
// at the last point, floor(100 x inflate).
struct BoundSummary {
  int seeds = 0;
  std::vector<int> at;      // arrived-demand points, % of the GPU capacity
  std::vector<double> pct;  // mean bound at each point, % of the GPU capacity
};
Result<BoundSummary> SummarizeBounds(const Trace& trace, std::span<const uint64_t> seeds,
                                     double inflate, int jobs);

}  // namespace tessera::sim

#endif  // TESSERA_SIM_BOUND_H_
