// Drives a cluster through admission cycles in tests: a cycle's decisions applied to the state
// and the pending and running lists, as the control plane applies them.
#ifndef TESSERA_TESTS_CORE_CYCLE_APPLY_H_
#define TESSERA_TESTS_CORE_CYCLE_APPLY_H_

#include <gtest/gtest.h>

#include <optional>
#include <utility>
#include <vector>

#include "core/admission.h"
#include "core/cluster_state.h"

namespace tessera::core::testing {

// Applies `r` (from a cycle over `pending` and `running`): growths placed, preempted work and
// the running work `ends` marks (1 per running index; empty: none) released and taken off
// `running`, admissions allocated and running, the admitted taken off `pending`. Returns the
// preempted workloads, for the caller to queue again.
inline std::vector<Workload> ApplyCycle(const CycleResult& r, ClusterState& state,
                                        std::vector<Workload>& pending,
                                        std::vector<AdmittedWorkload>& running,
                                        std::vector<uint8_t> ends = {}) {
  for (const Growth& g : r.growths) {
    EXPECT_TRUE(state.Allocate(g.placement).ok());
    running[g.running_index].placements[g.pod_index] = g.placement;
  }
  std::vector<uint8_t> preempted(running.size(), 0);
  for (const Preemption& p : r.preemptions) preempted[p.running_index] = 1;
  ends.resize(running.size(), 0);
  std::vector<AdmittedWorkload> still;
  std::vector<Workload> back;
  for (size_t i = 0; i < running.size(); ++i) {
    if (!preempted[i] && !ends[i]) {
      still.push_back(std::move(running[i]));
      continue;
    }
    for (const std::optional<Placement>& p : running[i].placements) {
      if (p) {
        EXPECT_TRUE(state.Release(*p).ok());
      }
    }
    if (preempted[i]) back.push_back(running[i].workload);
  }
  std::vector<uint8_t> admitted(pending.size(), 0);
  for (const Admission& a : r.admissions) {
    admitted[a.pending_index] = 1;
    for (const std::optional<Placement>& p : a.admitted.placements) {
      if (p) {
        EXPECT_TRUE(state.Allocate(*p).ok());
      }
    }
    still.push_back(a.admitted);
  }
  running = std::move(still);
  std::vector<Workload> left;
  for (size_t i = 0; i < pending.size(); ++i) {
    if (!admitted[i]) left.push_back(std::move(pending[i]));
  }
  pending = std::move(left);
  return back;
}

}  // namespace tessera::core::testing

#endif  // TESSERA_TESTS_CORE_CYCLE_APPLY_H_
