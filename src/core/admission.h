// The queue layer's scheduling cycle: decides which pending workloads run (quota, fair sharing,
// priorities), where (through the placement Scheduler, in the same cycle), who is preempted to
// make room, and which nodes are held for a blocked job while smaller work backfills.
//
// One call = one cycle: input is a cluster snapshot that holds every running workload's
// placements, the pending and running workloads and the time; output is admissions with exact
// placements, preemptions with reasons, reservations, and a reason for every workload left
// pending. Pure: the caller applies the decisions.
#ifndef TESSERA_CORE_ADMISSION_H_
#define TESSERA_CORE_ADMISSION_H_

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/cluster_state.h"
#include "core/quota.h"
#include "core/quota_report.h"
#include "core/scheduler.h"
#include "core/workload.h"

namespace tessera::core {

// Kueue's fair-sharing preemption strategies (config fairSharing.preemptionStrategies): whether
// a preemptor whose queue's share becomes `preemptor_new` may take a workload from a queue whose
// share is `victim_old` before and `victim_new` after.
enum class FairStrategy : uint8_t {
  kLessThanOrEqualToFinalShare,  // preemptor_new <= victim_new
  kLessThanInitialShare,         // preemptor_new < victim_old
};

struct CycleOptions {
  // Kueue's fairSharing.enable. On: queue heads ordered by weighted dominant-resource share, and
  // preemption in the cohort by the fair-sharing strategies below. Off (Kueue's default): the
  // classic order (work that does not borrow first, then priority, then age) and classic
  // preemption (reclaimWithinCohort, borrowWithinCohort, the nominal-quota rule).
  bool fair_sharing = false;
  // Tried in order; Kueue's default is both, in this order.
  std::vector<FairStrategy> fair_strategies = {FairStrategy::kLessThanOrEqualToFinalShare,
                                               FairStrategy::kLessThanInitialShare};
  // Hold nodes for a workload blocked for lack of room, so smaller work cannot delay it.
  bool backfill = true;
  // Most reservations made in one cycle (one per queue at most).
  int max_reservations = 16;
  // Fill CycleResult::quotas (the control plane shows it; a simulation has no use for it).
  bool report_quotas = false;
  // A waiting workload whose equal (same queue, shape, priority, runtime and namespace) was
  // found waiting while nothing has changed since (no admission, preemption, reservation or
  // newly found failure) waits for the same reason without being tried again. The results are
  // those of trying it (tests run both ways); off only to compare.
  bool reuse_equal_verdicts = true;
};

struct Admission {
  size_t pending_index = 0;  // into the cycle's pending list
  AdmittedWorkload admitted;
  bool borrowing = false;  // admitted above the queue's nominal quota
};

// Why a workload was preempted, as Kueue's Preempted condition reasons say it.
enum class PreemptionCause : uint8_t {
  kInClusterQueue,                 // a workload of the same queue
  kInCohortReclamation,            // the victim's queue borrowed quota the preemptor's lends
  kInCohortReclaimWhileBorrowing,  // borrowWithinCohort: the preemptor borrows as it reclaims
  kInCohortFairSharing,            // fair sharing: the victim's queue has the higher share
  // kube-scheduler's default preemption (work outside queues): the victim has lower priority;
  // Kubernetes' DisruptionTarget reason.
  kPreemptionByScheduler,
  // Kueue's eviction of admitted work when its ClusterQueue's stopPolicy is HoldAndDrain.
  kClusterQueueStopped,
};
// "InClusterQueue", "InCohortReclamation", "InCohortReclaimWhileBorrowing",
// "InCohortFairSharing", "PreemptionByScheduler", "ClusterQueueStopped".
std::string_view PreemptionCauseName(PreemptionCause c);

struct Preemption {
  size_t running_index = 0;  // into the cycle's running list
  PreemptionCause cause = PreemptionCause::kInClusterQueue;
  std::string victim;
  std::string preemptor;
  // "preempted by team-a/train-2 (queue team-a, priority 100): reclaiming quota lent to queue
  // team-b".
  std::string reason;
};

// Nodes held for a workload that has quota but no room; work that would not finish before
// `start_ms` cannot use them.
struct Reservation {
  std::string workload;
  std::vector<NodeId> nodes;
  std::optional<int64_t> start_ms;  // unset: unknown (running work has no estimated runtime)
};

// A member of a running workload placed after its admission (a gang admitted with min_member
// of more pods starts the others as room appears), or why it still waits.
struct Growth {
  size_t running_index = 0;  // into the cycle's running list
  size_t pod_index = 0;      // into the workload's pods (ExpandPods order)
  Placement placement;
};
// Members of a running workload that stay unplaced after the cycle, and why: the `count` pods
// from `pod_index` on (ExpandPods order), none of them placed.
struct WaitingPod {
  size_t running_index = 0;
  size_t pod_index = 0;
  size_t count = 1;
  std::string reason;
};

// Where a waiting workload stands in its queue's own order (priority, then age, then name): the
// order the cycle tried its queue's workloads in. Unset (position 0) for one outside any queue's
// order (its local queue or priority class is missing, it yields to its preemptor).
struct QueuePlace {
  std::string queue;
  int64_t position = 0;  // 1: the queue's head
  int64_t waiting = 0;   // workloads in that order
  int32_t priority = 0;
  // Whether its pods would fit with all running work ended: kNo when no node could ever hold
  // one it needs (a selector, affinity or taint no node matches, more GPUs than any node has;
  // kube-scheduler's UnschedulableAndUnresolvable), or when the search for room to hold for a
  // blocked queue head (backfill's) found none; kYes when that search found room. It waits for
  // a change to the cluster, not for room, when kNo. kUnknown: neither was found this cycle.
  enum class Fit : uint8_t { kUnknown, kYes, kNo };
  Fit fits_when_all_end = Fit::kUnknown;
};

struct CycleResult {
  std::vector<Admission> admissions;
  std::vector<Growth> growths;
  std::vector<WaitingPod> waiting;
  std::vector<Preemption> preemptions;
  std::vector<Reservation> reservations;
  // Parallel to the pending list: why each workload stays pending; empty when admitted.
  std::vector<std::string> pending_reasons;
  // Parallel to the pending list: where each stood in its queue as the cycle began.
  std::vector<QueuePlace> pending_places;
  // Each queue's and cohort's quota and usage after the cycle's decisions (with
  // CycleOptions::report_quotas).
  std::vector<QuotaNodeReport> quotas;
  int placement_attempts = 0;  // gang placements tried (admission, preemption, reservation)
  int placement_cache_hits = 0;
  // Waiting workloads given an equal one's verdict (CycleOptions::reuse_equal_verdicts).
  int reused_verdicts = 0;
};

namespace cycle {
class CycleRun;
}  // namespace cycle

class AdmissionCycle {
 public:
  static Result<AdmissionCycle> Create(const QueueConfig& config, CycleOptions options = {});

  const QuotaTree& quotas() const { return tree_; }

  // One cycle. `snapshot` must hold the placements of every running workload; `placer` finds the
  // placements (its reserve plugins see admissions; simulations are rolled back). `held`: the
  // previous cycle's reservations, which keep their nodes until their owner's turn.
  CycleResult Run(Scheduler& placer, const ClusterState& snapshot,
                  std::span<const Workload> pending, std::span<const AdmittedWorkload> running,
                  int64_t now_ms, std::span<const Reservation> held = {}) const;

 private:
  friend class cycle::CycleRun;
  CycleOptions options_;
  QuotaTree tree_;
  std::unordered_map<std::string, std::string> local_queues_;  // "ns/name" -> queue
  std::unordered_map<std::string, PriorityClassSpec> priority_classes_;
  std::optional<PriorityClassSpec> default_class_;
  std::unordered_map<std::string, NamespaceQuota> namespace_quotas_;
};

}  // namespace tessera::core

#endif  // TESSERA_CORE_ADMISSION_H_
