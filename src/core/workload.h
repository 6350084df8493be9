// A workload: the unit the queue layer admits (a Job, a Volcano PodGroup, a gang), made of pod
// sets, admitted all together or not at all, and charged to quota by what its pods really hold.
#ifndef TESSERA_CORE_WORKLOAD_H_
#define TESSERA_CORE_WORKLOAD_H_

#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/cluster_state.h"
#include "core/gang_pods.h"
#include "core/pod.h"
#include "core/queue_spec.h"

namespace tessera::core {

struct PodSet {
  std::string name;
  PodSpec pod;
  int32_t count = 1;
  // How many of this set's pods the gang needs placed (Volcano's task minAvailable), besides
  // the workload's min_member in all; 0: no minimum of its own.
  int32_t min_count = 0;
};

struct Workload {
  std::string name;  // unique among pending and running, e.g. "team-a/train-7"
  std::string namespace_name;
  std::string local_queue;     // LocalQueue in the namespace (kueue.x-k8s.io/queue-name)
  std::string priority_class;  // empty: the global default class, or priority 0
  int64_t created_ms = 0;      // creation time on the caller's clock
  std::vector<PodSet> pod_sets;
  // Gang: pods that must be placed together; 0: all of them.
  int32_t min_member = 0;
  // Expected run time, for backfill; 0: unknown.
  int64_t estimated_runtime_ms = 0;
  // Set on a workload that `yields_to` (another workload's name) preempted: the quota that
  // preemptor freed is its own until it is admitted or gives up. While the preemptor waits
  // (until `yield_until_ms`), this one is not admitted ahead of it; and while this one waits,
  // it never takes its preemptor as a victim. So two workloads of equal share and priority do
  // not trade the same room back and forth (Kueue issue #13662).
  std::string yields_to;
  int64_t yield_until_ms = 0;
};

struct AdmittedWorkload {
  Workload workload;
  std::string queue;  // the queue (ClusterQueue) that admitted it
  // Per pod set (in pod-set order), the flavor charged per quota resource (indexed by
  // QuotaResource; empty: not charged). Pod sets may have different flavors, as Kueue assigns
  // flavors per pod set.
  std::vector<std::array<std::string, kNumQuotaResources>> flavors;
  // Per pod, in pod-set order (see ExpandPods); empty for members of a gang above min_member
  // that found no room. The cluster state given to a cycle holds all of them.
  std::vector<std::optional<Placement>> placements;
  int32_t priority = 0;
  int64_t admitted_ms = 0;
};

// The workload's pods as a gang: a run per pod set, members named "<workload>/<pod set>-<i>",
// the first min_count of each set required.
GangPods GangOf(const Workload& w);
// Pods of a workload in pod-set order, named "<workload>/<pod set>-<i>" (GangOf, expanded).
std::vector<PodSpec> ExpandPods(const Workload& w);
int32_t PodCount(const Workload& w);

// The least a workload can charge per quota resource before its devices are known: CPU and
// memory requests, and GPU equivalents as requested (whole cards 1000, shares by compute; one
// milli per MIG instance or replica, whose size depends on the card).
QuotaVector RequestLowerBound(const Workload& w);
// RequestLowerBound of each pod set, in pod-set order.
std::vector<QuotaVector> SetLowerBounds(const Workload& w);

// What placements hold, per quota resource: CPU and memory on the node, and the GPU equivalents
// of their devices (see ClusterState::DeviceGpuMilli).
QuotaVector PlacedAmount(const ClusterState& state,
                         std::span<const std::optional<Placement>> placements);
// PlacedAmount of each pod set of `w`, whose pods `placements` places in ExpandPods order.
std::vector<QuotaVector> SetPlacedAmounts(const ClusterState& state, const Workload& w,
                                          std::span<const std::optional<Placement>> placements);

// A string equal for workloads whose pods are interchangeable for placement.
std::string ShapeKey(const Workload& w);

}  // namespace tessera::core

#endif  // TESSERA_CORE_WORKLOAD_H_
