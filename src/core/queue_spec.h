// Queueing objects with Kueue/Volcano semantics: resource flavors, queues (ClusterQueue) with
// per-flavor quotas in resource groups, a cohort tree, local queues, namespace quotas and
// priority classes. Plain values; `ValidateQueueConfig` checks them as a whole.
//
// Quota is counted in three resources: GPU in milli-GPU equivalents (a whole card 1000, a 0.3
// share 300, a 1g.10gb slice of an A100 143, one of 4 time-slice replicas 250), CPU in
// millicores and memory in MiB.
#ifndef TESSERA_CORE_QUEUE_SPEC_H_
#define TESSERA_CORE_QUEUE_SPEC_H_

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "core/node.h"
#include "core/pod.h"
#include "core/status.h"

namespace tessera::core {

enum class QuotaResource : uint8_t { kGpu = 0, kCpu = 1, kMemory = 2 };
inline constexpr int kNumQuotaResources = 3;
// "nvidia.com/gpu", "cpu", "memory".
std::string_view QuotaResourceName(QuotaResource r);

// An amount per quota resource, indexed by QuotaResource.
using QuotaVector = std::array<int64_t, kNumQuotaResources>;

// A kind of node (Kueue ResourceFlavor): work admitted under it runs only on nodes with these
// labels and GPU models, and tolerates these taints.
struct ResourceFlavor {
  std::string name;
  Labels node_labels;
  std::vector<std::string> gpu_models;  // empty: any model
  std::vector<Toleration> tolerations;
  // Kueue's nodeTaints: only work whose pods tolerate them (NoSchedule, NoExecute) may be
  // assigned this flavor.
  std::vector<Taint> node_taints;
};

struct ResourceQuota {
  QuotaResource resource = QuotaResource::kGpu;
  int64_t nominal = 0;
  // Most the owner may use above `nominal`, taken from its cohort; unset: no limit.
  std::optional<int64_t> borrowing_limit;
  // Most of `nominal` others in the cohort may borrow; unset: all of it.
  std::optional<int64_t> lending_limit;
};

struct FlavorQuotas {
  std::string flavor;
  std::vector<ResourceQuota> resources;  // one per covered resource of the group
};

// Resources charged together: a workload takes one flavor for all of them, the first in order
// whose quota and nodes fit.
struct ResourceGroup {
  std::vector<QuotaResource> covered;
  std::vector<FlavorQuotas> flavors;
};

enum class QueueingStrategy : uint8_t {
  kStrictFifo,      // a head that cannot be admitted blocks the workloads behind it
  kBestEffortFifo,  // workloads behind a blocked head may be admitted
};

enum class WithinQueuePreemption : uint8_t { kNever, kLowerPriority, kLowerOrNewerEqualPriority };
enum class ReclaimPreemption : uint8_t { kNever, kLowerPriority, kAny };
enum class BorrowWithinCohort : uint8_t { kNever, kLowerPriority };

// How victims are chosen. kKueue: Kueue's rules (the fields below). kKubeScheduler:
// kube-scheduler's default preemption, for work outside queues: running work of the same queue
// with strictly lower priority (within_queue kLowerPriority); a one-pod workload takes its
// victims from one node, the node whose victims cost least (kube-scheduler's
// pickOneNodeForPreemption), a gang the fewest lowest-priority victims across nodes.
enum class PreemptionStyle : uint8_t { kKueue, kKubeScheduler };

struct PreemptionPolicy {
  PreemptionStyle style = PreemptionStyle::kKueue;
  WithinQueuePreemption within_queue = WithinQueuePreemption::kNever;
  // Taking back lent quota from queues of the cohort that are borrowing.
  ReclaimPreemption reclaim_within_cohort = ReclaimPreemption::kNever;
  // Preempting in the cohort while the preemptor itself borrows: only victims of priority below
  // both the preemptor's and `max_priority_threshold` (when set).
  BorrowWithinCohort borrow_within_cohort = BorrowWithinCohort::kNever;
  std::optional<int32_t> max_priority_threshold;
};

// Taking back GPUs from work that holds them idle (core/accounting.h's IdlePods): a job whose
// pods with GPUs are all idle for `after_ms` is stopped, when its priority is at most
// `max_priority` (every priority when unset).
struct IdleReclaimPolicy {
  int64_t after_ms = 0;  // 0: never
  std::optional<int32_t> max_priority;
};

// Kueue's stopPolicy: kHold admits nothing new; kHoldAndDrain also evicts what is admitted.
enum class StopPolicy : uint8_t { kNone, kHold, kHoldAndDrain };

// A queue with quota (Kueue ClusterQueue).
struct QueueSpec {
  std::string name;
  std::string cohort;  // empty: none
  std::vector<ResourceGroup> resource_groups;
  QueueingStrategy strategy = QueueingStrategy::kBestEffortFifo;
  PreemptionPolicy preemption;
  // fairSharing.weight in thousandths (1000 = weight 1); 0: borrows only what nobody else wants.
  int64_t fair_weight_milli = 1000;
  IdleReclaimPolicy idle_reclaim;
  StopPolicy stop = StopPolicy::kNone;
  // Why the queue is stopped, in its users' words (a closed Volcano Queue); empty: Kueue's
  // stopPolicy is named.
  std::string stop_reason;
  // Kueue's flavorFungibility.whenCanBorrow: false (Borrow, the default) takes the first flavor
  // that fits even by borrowing; true (TryNextFlavor) prefers a later flavor that fits without.
  bool try_next_flavor_before_borrowing = false;
  // Kueue's flavorFungibility.whenCanPreempt: false (TryNextFlavor, the default) tries every
  // flavor before preempting; true (Preempt, v1beta2's MayStopSearch) preempts in the first
  // flavor where victims make room, before later flavors are tried.
  bool preempt_before_next_flavor = false;
  // Volcano's reclaimable: false keeps the cohort from reclaiming what the queue borrowed.
  bool reclaimable = true;
};

// A node of the cohort tree; may hold quota of its own and lend/borrow to its parent.
struct CohortSpec {
  std::string name;
  std::string parent;  // empty: a root
  std::vector<ResourceGroup> resource_groups;
  int64_t fair_weight_milli = 1000;
};

// A namespaced name users submit to, pointing at a queue (Kueue LocalQueue).
struct LocalQueueSpec {
  std::string namespace_name;
  std::string name;
  std::string queue;
};

// Hard limits on what a namespace's admitted work holds (ResourceQuota requests.* and limits.*;
// requests equal limits for GPUs, and the core charges requests).
struct NamespaceQuota {
  std::string namespace_name;
  std::array<std::optional<int64_t>, kNumQuotaResources> hard;
  // ResourceQuota's `pods` (or `count/pods`): the pods of the namespace's unfinished Jobs, held
  // by the API server when a Job is written (admission does not read it).
  std::optional<int64_t> pods;
};

enum class PreemptionPolicyKind : uint8_t { kPreemptLowerPriority, kNever };

struct PriorityClassSpec {
  std::string name;
  int32_t value = 0;
  PreemptionPolicyKind preemption = PreemptionPolicyKind::kPreemptLowerPriority;
  bool global_default = false;
};

struct QueueConfig {
  std::vector<ResourceFlavor> flavors;
  std::vector<CohortSpec> cohorts;
  std::vector<QueueSpec> queues;
  std::vector<LocalQueueSpec> local_queues;
  std::vector<NamespaceQuota> namespace_quotas;
  std::vector<PriorityClassSpec> priority_classes;
};

// Checks names (unique, non-empty), references (flavors, cohorts, parents, queues), the cohort
// tree (no cycles), quantities (non-negative; lending limit at most nominal), resource groups
// (each resource in one group of a queue; every flavor of a group lists exactly the covered
// resources; a flavor in one group of a queue only) and at most one global default priority
// class. Errors name the object and field: `queues[2] (team-a).resource_groups[0].flavors[1]
// .resources[0].nominal: must be >= 0, got -4`.
Status ValidateQueueConfig(const QueueConfig& config);

// As in Kueue, a cohort exists as soon as a queue or a cohort names it: adds a cohort without
// quota of its own (a root, weight 1) for each name used as a queue's cohort or a cohort's
// parent that no CohortSpec declares, in name order.
void AddImplicitCohorts(QueueConfig* config);

}  // namespace tessera::core

#endif  // TESSERA_CORE_QUEUE_SPEC_H_
