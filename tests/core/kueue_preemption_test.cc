// Cases ported from Kueue's own preemption tests (kubernetes-sigs/kueue,
// pkg/scheduler/preemption/preemption_test.go: TestPreemption and TestFairPreemptions). Each
// case keeps Kueue's name, queues, admitted workloads, incoming workload and expected victims
// with their Preempted reasons. Kueue's quantities map one to one: "1" CPU is 1000 millicores,
// memory "1Gi" is 1024 MiB and a bare memory count is MiB. The cluster has room for everything,
// so quota alone decides, as in Kueue's tests. Cases whose Kueue test forces a flavor
// assignment that Tessera's own flavor choice would not make (a workload that fits by
// borrowing, per-pod-set flavors) are not ported.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/admission.h"
#include "test_cluster.h"

namespace tessera::core {
namespace {

using testing::MakeNode;
using testing::MakePod;
using testing::MustAdd;
using testing::MustScheduler;

// nominal, borrowing limit, lending limit; -1: unset.
struct Q {
  int64_t nominal;
  int64_t borrowing = -1;
  int64_t lending = -1;
};

ResourceQuota Quota(QuotaResource r, Q q) {
  ResourceQuota out{r, q.nominal, std::nullopt, std::nullopt};
  if (q.borrowing >= 0) out.borrowing_limit = q.borrowing;
  if (q.lending >= 0) out.lending_limit = q.lending;
  return out;
}

constexpr int64_t kCpu = 1000;  // millicores per CPU
constexpr int64_t kGi = 1024;   // MiB per GiB

// A queue with one resource group: flavor "default" covering CPU (and memory when given).
QueueSpec CQ(std::string name, std::string cohort, Q cpu, std::optional<Q> memory = std::nullopt) {
  QueueSpec q;
  q.name = std::move(name);
  q.cohort = std::move(cohort);
  ResourceGroup g;
  g.covered = {QuotaResource::kCpu};
  FlavorQuotas f{"default", {Quota(QuotaResource::kCpu, cpu)}};
  if (memory) {
    g.covered.push_back(QuotaResource::kMemory);
    f.resources.push_back(Quota(QuotaResource::kMemory, *memory));
  }
  g.flavors = {f};
  q.resource_groups = {g};
  return q;
}

QueueSpec With(QueueSpec q, WithinQueuePreemption within, ReclaimPreemption reclaim,
               BorrowWithinCohort borrow = BorrowWithinCohort::kNever,
               std::optional<int32_t> threshold = std::nullopt) {
  q.preemption.within_queue = within;
  q.preemption.reclaim_within_cohort = reclaim;
  q.preemption.borrow_within_cohort = borrow;
  q.preemption.max_priority_threshold = threshold;
  return q;
}

constexpr auto kNever = WithinQueuePreemption::kNever;
constexpr auto kLower = WithinQueuePreemption::kLowerPriority;
constexpr auto kLowerOrNewer = WithinQueuePreemption::kLowerOrNewerEqualPriority;
constexpr auto kRNever = ReclaimPreemption::kNever;
constexpr auto kRLower = ReclaimPreemption::kLowerPriority;
constexpr auto kRAny = ReclaimPreemption::kAny;
constexpr auto kBLower = BorrowWithinCohort::kLowerPriority;

// Kueue's defaultClusterQueues of TestPreemption (the standalone queue's memory flavors, used
// only by cases not ported, are left out).
std::vector<QueueSpec> DefaultQueues() {
  return {
      With(CQ("standalone", "", {6 * kCpu}), kLower, kRNever),
      With(CQ("c1", "cohort", {6 * kCpu, 6 * kCpu}, Q{3 * kGi, 3 * kGi}), kLower, kRLower),
      With(CQ("c2", "cohort", {6 * kCpu, 6 * kCpu}, Q{3 * kGi, 3 * kGi}), kNever, kRAny),
      With(CQ("d1", "cohort-no-limits", {6 * kCpu}, Q{3 * kGi}), kLower, kRLower),
      With(CQ("d2", "cohort-no-limits", {6 * kCpu}, Q{3 * kGi}), kNever, kRAny),
      With(CQ("l1", "legion", {6 * kCpu, 12 * kCpu}, Q{3 * kGi, 6 * kGi}), kLower, kRLower),
      With(CQ("preventStarvation", "", {6 * kCpu}), kLowerOrNewer, kRNever),
      With(CQ("a_standard", "with_shared_cq", {1 * kCpu, 12 * kCpu}), kNever, kRLower, kBLower, 0),
      With(CQ("b_standard", "with_shared_cq", {1 * kCpu, 12 * kCpu}), kLower, kRAny, kBLower, 0),
      With(CQ("a_best_effort", "with_shared_cq", {1 * kCpu, 12 * kCpu}), kNever, kRLower, kBLower,
           0),
      With(CQ("b_best_effort", "with_shared_cq", {0, 13 * kCpu}), kNever, kRLower, kBLower, 0),
      CQ("shared", "with_shared_cq", {10 * kCpu}),
      With(CQ("lend1", "cohort-lend", {6 * kCpu, -1, 4 * kCpu}), kLower, kRLower),
      With(CQ("lend2", "cohort-lend", {6 * kCpu, -1, 2 * kCpu}), kLower, kRLower),
      With(CQ("a", "cohort-three", {2 * kCpu}, Q{2}), kLower, kRAny),
      CQ("b", "cohort-three", {2 * kCpu}, Q{2}),
      CQ("c", "cohort-three", {2 * kCpu}, Q{2}),
  };
}

// Kueue's baseCQs of TestFairPreemptions.
std::vector<QueueSpec> FairQueues() {
  std::vector<QueueSpec> out;
  for (const char* n : {"a", "b", "c"}) {
    out.push_back(With(CQ(n, "all", {3 * kCpu}), kLower, kRAny, kBLower, -3));
  }
  out.push_back(CQ("preemptible", "all", {0}));
  return out;
}

// A workload: its queue, priority, CPU (millicores) and memory (MiB) request; admitted ones
// are charged to flavor "default" at `admitted_ms`.
struct W {
  std::string name;
  std::string queue;
  int32_t priority = 0;
  int64_t cpu_milli = 0;
  int64_t memory_mib = 0;
  int64_t admitted_ms = 0;
  int64_t created_ms = 0;
  std::string flavor = "default";  // of an admitted workload's CPU and memory
};

struct Case {
  std::string kueue_case;  // Kueue's name for it
  std::vector<QueueSpec> queues;
  std::vector<W> admitted;
  W incoming;
  std::set<std::string> want;  // "name:Reason"
  std::vector<CohortSpec> cohorts = {};
};

Workload MakeWorkload(const W& w) {
  Workload out;
  out.name = w.name;
  out.namespace_name = w.queue;
  out.local_queue = "main";
  out.created_ms = w.created_ms;
  api::ResourceList req;
  if (w.cpu_milli > 0) req["cpu"] = std::to_string(w.cpu_milli) + "m";
  if (w.memory_mib > 0) req["memory"] = std::to_string(w.memory_mib) + "Mi";
  out.pod_sets.push_back({"main", MakePod("", req), 1});
  // Priority comes with the class named after it.
  out.priority_class = "p" + std::to_string(w.priority);
  return out;
}

// One admission cycle: the case's queues (and the flavors they name, no node labels), its
// admitted workloads running, its incoming workload pending.
CycleResult RunCase(const Case& c, bool fair, std::vector<FairStrategy> strategies = {}) {
  QueueConfig cfg;
  std::set<std::string> flavors;
  for (const QueueSpec& q : c.queues) {
    for (const ResourceGroup& g : q.resource_groups) {
      for (const FlavorQuotas& f : g.flavors) flavors.insert(f.flavor);
    }
  }
  for (const std::string& f : flavors) cfg.flavors.push_back({f, {}, {}, {}});
  cfg.queues = c.queues;
  cfg.cohorts = c.cohorts;
  AddImplicitCohorts(&cfg);
  for (const QueueSpec& q : cfg.queues) cfg.local_queues.push_back({q.name, "main", q.name});
  for (int p = -5; p <= 5; ++p) {
    cfg.priority_classes.push_back(
        {"p" + std::to_string(p), p, PreemptionPolicyKind::kPreemptLowerPriority, false});
  }
  CycleOptions options;
  options.fair_sharing = fair;
  if (!strategies.empty()) options.fair_strategies = strategies;
  Result<AdmissionCycle> cycle = AdmissionCycle::Create(cfg, options);
  EXPECT_TRUE(cycle.ok()) << cycle.status().message();
  if (!cycle.ok()) return {};
  ClusterState state;
  NodeSpec node = MakeNode("big", 0);
  node.allocatable = {10'000 * kCpu, 10'000 * kGi};
  const NodeId id = MustAdd(state, node);
  std::vector<AdmittedWorkload> running;
  for (const W& w : c.admitted) {
    AdmittedWorkload a;
    a.workload = MakeWorkload(w);
    a.queue = w.queue;
    a.priority = w.priority;
    a.admitted_ms = w.admitted_ms;
    a.flavors[static_cast<int>(QuotaResource::kCpu)] = w.cpu_milli > 0 ? w.flavor : "";
    a.flavors[static_cast<int>(QuotaResource::kMemory)] = w.memory_mib > 0 ? w.flavor : "";
    Placement p;
    p.node = id;
    p.resources = {w.cpu_milli, w.memory_mib};
    EXPECT_TRUE(state.Allocate(p).ok());
    a.placements = {p};
    running.push_back(std::move(a));
  }
  std::unique_ptr<Scheduler> placer = MustScheduler("bestfit");
  const std::vector<Workload> pending = {MakeWorkload(c.incoming)};
  return cycle->Run(*placer, state, pending, running, /*now_ms=*/1000);
}

std::set<std::string> Victims(const CycleResult& r) {
  std::set<std::string> got;
  for (const Preemption& p : r.preemptions) {
    got.insert(p.victim + ":" + std::string(PreemptionCauseName(p.cause)));
  }
  return got;
}

std::set<std::string> Preempted(const Case& c, bool fair,
                                std::vector<FairStrategy> strategies = {}) {
  CycleResult r = RunCase(c, fair, std::move(strategies));
  EXPECT_TRUE(r.admissions.empty()) << c.kueue_case << ": the incoming workload fits without "
                                    << "preemption, so the case does not test it";
  return Victims(r);
}

// Kueue's TestPreemption.
TEST(KueuePreemption, ClassicCasesFromKueue) {
  const std::vector<QueueSpec> qs = DefaultQueues();
  auto cpu = [](std::string n, std::string q, int32_t prio, double cpus, int64_t at = 0) {
    return W{std::move(n), std::move(q), prio, static_cast<int64_t>(cpus * kCpu), 0, at, 0};
  };
  auto cpu_mem = [](std::string n, std::string q, int32_t prio, double cpus, int64_t mib) {
    return W{std::move(n), std::move(q), prio, static_cast<int64_t>(cpus * kCpu), mib, 0, 0};
  };
  const std::vector<Case> cases = {
      {"preempt lowest priority",
       qs,
       {cpu("low", "standalone", -1, 2), cpu("mid", "standalone", 0, 2),
        cpu("high", "standalone", 1, 2)},
       cpu("in", "standalone", 1, 2),
       {"low:InClusterQueue"}},
      {"preempt multiple",
       qs,
       {cpu("low", "standalone", -1, 2), cpu("mid", "standalone", 0, 2),
        cpu("high", "standalone", 1, 2)},
       cpu("in", "standalone", 1, 3),
       {"low:InClusterQueue", "mid:InClusterQueue"}},
      {"no preemption for low priority",
       qs,
       {cpu("low", "standalone", -1, 3), cpu("mid", "standalone", 0, 3)},
       cpu("in", "standalone", -1, 1),
       {}},
      {"not enough low priority workloads",
       qs,
       {cpu("low", "standalone", -1, 3), cpu("mid", "standalone", 0, 3)},
       cpu("in", "standalone", 0, 4),
       {}},
      {"some free quota, preempt low priority",
       qs,
       {cpu("low", "standalone", -1, 1), cpu("mid", "standalone", 0, 1),
        cpu("high", "standalone", 1, 3)},
       cpu("in", "standalone", 1, 2),
       {"low:InClusterQueue"}},
      {"minimal set excludes low priority",
       qs,
       {cpu("low", "standalone", -1, 1), cpu("mid", "standalone", 0, 2),
        cpu("high", "standalone", 1, 3)},
       cpu("in", "standalone", 1, 2),
       {"mid:InClusterQueue"}},
      {"reclaim quota from borrower",
       qs,
       {cpu("c1-low", "c1", -1, 3), cpu("c2-mid", "c2", 0, 3), cpu("c2-high", "c2", 1, 6)},
       cpu("in", "c1", 1, 3),
       {"c2-mid:InCohortReclamation"}},
      {"reclaim quota if workload requests 0 resources for a resource at nominal quota",
       qs,
       {cpu_mem("c1-low", "c1", -1, 3, 3 * kGi), cpu("c2-mid", "c2", 0, 3),
        cpu("c2-high", "c2", 1, 6)},
       cpu("in", "c1", 1, 3),
       {"c2-mid:InCohortReclamation"}},
      {"not enough workloads borrowing",
       qs,
       {cpu("c1-high", "c1", 1, 4), cpu("c2-low-1", "c2", -1, 4), cpu("c2-low-2", "c2", -1, 4)},
       cpu("in", "c1", 1, 4),
       {}},
      {"preempting locally and borrowing other resources in cohort, without cohort candidates",
       qs,
       {cpu("c1-low", "c1", -1, 4), cpu("c2-low-1", "c2", -1, 4), cpu("c2-high-2", "c2", 1, 4)},
       cpu_mem("in", "c1", 1, 4, 5 * kGi),
       {"c1-low:InClusterQueue"}},
      {"preempting locally and borrowing same resource in cohort",
       qs,
       {cpu("c1-med", "c1", 0, 4), cpu("c1-low", "c1", -1, 4), cpu("c2-low-1", "c2", -1, 4)},
       cpu("in", "c1", 1, 4),
       {"c1-low:InClusterQueue"}},
      {"preempting locally and borrowing same resource in cohort; no borrowing limit in the "
       "cohort",
       qs,
       {cpu("d1-med", "d1", 0, 4), cpu("d1-low", "d1", -1, 4), cpu("d2-low-1", "d2", -1, 4)},
       cpu("in", "d1", 1, 4),
       {"d1-low:InClusterQueue"}},
      {"preempting locally and borrowing other resources in cohort, with cohort candidates",
       qs,
       {cpu("c1-med", "c1", 0, 4), cpu("c2-low-1", "c2", -1, 5), cpu("c2-low-2", "c2", -1, 1),
        cpu("c2-low-3", "c2", -1, 1)},
       cpu_mem("in", "c1", 1, 2, 5 * kGi),
       {"c1-med:InClusterQueue"}},
      {"preempting locally and not borrowing same resource in 1-queue cohort",
       qs,
       {cpu("l1-med", "l1", 0, 4), cpu("l1-low", "l1", -1, 2)},
       cpu("in", "l1", 1, 4),
       {"l1-med:InClusterQueue"}},
      {"do not reclaim borrowed quota from same priority for withinCohort=ReclaimFromLowerPriority",
       qs,
       {cpu("c1", "c1", 0, 2), cpu("c2-1", "c2", 0, 4), cpu("c2-2", "c2", 0, 4)},
       cpu("in", "c1", 0, 4),
       {}},
      {"reclaim borrowed quota from same priority for withinCohort=ReclaimFromAny",
       qs,
       {cpu("c1-1", "c1", 0, 4), cpu("c1-2", "c1", 1, 4), cpu("c2", "c2", 0, 2)},
       cpu("in", "c2", 0, 4),
       {"c1-1:InCohortReclamation"}},
      {"preempt from all ClusterQueues in cohort",
       qs,
       {cpu("c1-low", "c1", -1, 3), cpu("c1-mid", "c1", 0, 2), cpu("c2-low", "c2", -1, 3),
        cpu("c2-mid", "c2", 0, 4)},
       cpu("in", "c1", 0, 4),
       {"c1-low:InClusterQueue", "c2-low:InCohortReclamation"}},
      {"preempt newer workloads with the same priority",
       qs,
       {W{"wl1", "preventStarvation", 2, 2 * kCpu, 0, 0, 0},
        W{"wl2", "preventStarvation", 1, 2 * kCpu, 0, 1000, 0},
        W{"wl3", "preventStarvation", 1, 2 * kCpu, 0, 0, 0}},
       W{"in", "preventStarvation", 1, 2 * kCpu, 0, 0, -15'000},
       {"wl2:InClusterQueue"}},
      {"use BorrowWithinCohort; allow preempting a lower-priority workload from another "
       "ClusterQueue while borrowing",
       qs,
       {cpu("a_best_effort_low", "a_best_effort", -1, 10),
        cpu("b_best_effort_low", "b_best_effort", -1, 1)},
       cpu("in", "a_standard", 0, 10),
       {"a_best_effort_low:InCohortReclaimWhileBorrowing"}},
      {"use BorrowWithinCohort; don't allow preempting a lower-priority workload with priority "
       "above MaxPriorityThreshold, if borrowing is required even after the preemption",
       qs,
       {cpu("b_standard", "b_standard", 1, 10)},
       cpu("in", "a_standard", 2, 10),
       {}},
      {"use BorrowWithinCohort; allow preempting a lower-priority workload with priority above "
       "MaxPriorityThreshold, if borrowing is not required after the preemption",
       qs,
       {cpu("b_standard", "b_standard", 1, 13)},
       cpu("in", "a_standard", 2, 1),
       {"b_standard:InCohortReclamation"}},
      {"use BorrowWithinCohort; don't allow for preemption of lower-priority workload from the "
       "same ClusterQueue",
       qs,
       {cpu("a_standard", "a_standard", 1, 13)},
       cpu("in", "a_standard", 2, 1),
       {}},
      {"use BorrowWithinCohort; only preempt from CQ if no workloads below threshold and already "
       "above nominal",
       qs,
       {cpu("a_standard_1", "a_standard", 1, 10), cpu("a_standard_2", "a_standard", 1, 1),
        cpu("b_standard_1", "b_standard", 1, 1), cpu("b_standard_2", "b_standard", 2, 1)},
       cpu("in", "b_standard", 3, 1),
       {"b_standard_1:InClusterQueue"}},
      {"use BorrowWithinCohort; preempt from CQ and from other CQs with workloads below threshold",
       qs,
       {cpu("b_standard_high", "b_standard", 2, 10), cpu("b_standard_mid", "b_standard", 1, 1),
        cpu("a_best_effort_low", "a_best_effort", -1, 1),
        cpu("a_best_effort_lower", "a_best_effort", -2, 1)},
       cpu("in", "b_standard", 2, 2),
       {"b_standard_mid:InClusterQueue", "a_best_effort_lower:InCohortReclaimWhileBorrowing"}},
      {"reclaim quota from lender",
       qs,
       {cpu("lend1-low", "lend1", -1, 3), cpu("lend2-mid", "lend2", 0, 3),
        cpu("lend2-high", "lend2", 1, 4)},
       cpu("in", "lend1", 1, 3),
       {"lend2-mid:InCohortReclamation"}},
      {"preempt from all ClusterQueues in cohort-lend",
       qs,
       {cpu("lend1-low", "lend1", -1, 3), cpu("lend1-mid", "lend1", 0, 2),
        cpu("lend2-low", "lend2", -1, 3), cpu("lend2-mid", "lend2", 0, 4)},
       cpu("in", "lend1", 0, 4),
       {"lend1-low:InClusterQueue", "lend2-low:InCohortReclamation"}},
      {"cannot preempt from other ClusterQueues if exceeds requestable quota including lending "
       "limit",
       qs,
       {cpu("lend2-low", "lend2", -1, 10)},
       cpu("in", "lend1", 0, 9),
       {}},
      {"preemptions from cq when target queue is exhausted for the single requested resource",
       qs,
       {cpu("a1", "a", -2, 1), cpu("a2", "a", -2, 1), cpu("a3", "a", -1, 1), cpu("b1", "b", 0, 1),
        cpu("b2", "b", 0, 1), cpu("b3", "b", 0, 1)},
       cpu("in", "a", 0, 2),
       {"a1:InClusterQueue", "a2:InClusterQueue"}},
      {"preemptions from cq when target queue is exhausted for two requested resources",
       qs,
       {cpu_mem("a1", "a", -2, 1, 1), cpu_mem("a2", "a", -2, 1, 1), cpu_mem("a3", "a", -1, 1, 1),
        cpu_mem("b1", "b", 0, 1, 1), cpu_mem("b2", "b", 0, 1, 1), cpu_mem("b3", "b", 0, 1, 1)},
       cpu_mem("in", "a", 0, 2, 2),
       {"a1:InClusterQueue", "a2:InClusterQueue"}},
      {"preemptions from cq when target queue is exhausted for one requested resource, but not "
       "the other",
       qs,
       {cpu("a1", "a", -2, 1), cpu("a2", "a", -2, 1), cpu("a3", "a", -1, 1), cpu("b1", "b", 0, 1),
        cpu("b2", "b", 0, 1), cpu("b3", "b", 0, 1)},
       cpu_mem("in", "a", 0, 2, 2),
       {"a1:InClusterQueue", "a2:InClusterQueue"}},
      {"allow preemption from other cluster queues if target cq is not exhausted for the "
       "requested resource",
       qs,
       {cpu("a1", "a", -1, 1), cpu("b1", "b", 0, 1), cpu("b2", "b", 0, 1), cpu("b3", "b", 0, 1),
        cpu("b4", "b", 0, 1), cpu("b5", "b", -1, 1)},
       cpu("in", "a", 0, 2),
       {"a1:InClusterQueue", "b5:InCohortReclamation"}},
      {"long range preemption",
       {With(CQ("cq-left", "cohort-left", {10 * kCpu}), kNever, kRAny),
        CQ("cq-right", "cohort-right", {0})},
       {cpu("to-be-preempted", "cq-right", 0, 5)},
       cpu("incoming", "cq-left", 0, 8),
       {"to-be-preempted:InCohortReclamation"},
       {{"cohort-left", "root", {}, 1000}, {"cohort-right", "root", {}, 1000}}},
  };
  EXPECT_GE(cases.size(), 30u);
  for (const Case& c : cases) {
    EXPECT_EQ(Preempted(c, /*fair=*/false), c.want) << "Kueue case: " << c.kueue_case;
  }
}

// Kueue's TestFairPreemptions (default strategies: LessThanOrEqualToFinalShare, then
// LessThanInitialShare).
TEST(KueuePreemption, FairSharingCasesFromKueue) {
  const std::vector<QueueSpec> qs = FairQueues();
  auto unit = [](std::string n, std::string q, int32_t prio = 0) {
    return W{std::move(n), std::move(q), prio, kCpu, 0, 0, 0};
  };
  auto cpu = [](std::string n, std::string q, double cpus) {
    return W{std::move(n), std::move(q), 0, static_cast<int64_t>(cpus * kCpu), 0, 0, 0};
  };
  std::vector<W> a3b5c1;
  for (const char* n : {"a1", "a2", "a3"}) a3b5c1.push_back(unit(n, "a"));
  for (const char* n : {"b1", "b2", "b3", "b4", "b5"}) a3b5c1.push_back(unit(n, "b"));
  a3b5c1.push_back(unit("c1", "c"));
  std::vector<W> a3b5 = a3b5c1;
  a3b5.pop_back();
  const std::vector<Case> cases = {
      {"reclaim nominal from user using the most",
       qs,
       a3b5c1,
       unit("c_incoming", "c"),
       {"b1:InCohortFairSharing"}},
      {"can reclaim from queue using less, if taking the latest workload from user using the "
       "most isn't enough",
       qs,
       {cpu("a1", "a", 3), cpu("a2", "a", 1), cpu("b1", "b", 2), cpu("b2", "b", 3)},
       cpu("c_incoming", "c", 3),
       {"a1:InCohortFairSharing"}},
      {"reclaim borrowable quota from user using the most",
       qs,
       a3b5c1,
       unit("a_incoming", "a"),
       {"b1:InCohortFairSharing"}},
      {"preempt one from each CQ borrowing",
       qs,
       {cpu("a1", "a", 0.5), cpu("a2", "a", 0.5), cpu("a3", "a", 3), cpu("b1", "b", 0.5),
        cpu("b2", "b", 0.5), cpu("b3", "b", 3)},
       cpu("c_incoming", "c", 2),
       {"a1:InCohortFairSharing", "b1:InCohortFairSharing"}},
      {"can't preempt when everyone under nominal",
       qs,
       {unit("a1", "a"), unit("a2", "a"), unit("a3", "a"), unit("b1", "b"), unit("b2", "b"),
        unit("b3", "b"), unit("c1", "c"), unit("c2", "c"), unit("c3", "c")},
       unit("c_incoming", "c"),
       {}},
      {"can't preempt when it would switch the imbalance", qs, a3b5, cpu("a_incoming", "a", 2), {}},
      {"can preempt lower priority workloads from same CQ",
       qs,
       {unit("a1_low", "a", -1), unit("a2_low", "a", -1), unit("a3", "a"), unit("a4", "a"),
        unit("b1", "b"), unit("b2", "b"), unit("b3", "b"), unit("b4", "b"), unit("b5", "b")},
       cpu("a_incoming", "a", 2),
       {"a1_low:InClusterQueue", "a2_low:InClusterQueue"}},
      {"preempt huge workload if there is no other option, as long as the target CQ gets a lower "
       "share",
       qs,
       {cpu("b1", "b", 9)},
       cpu("a_incoming", "a", 2),
       {"b1:InCohortFairSharing"}},
      {"can't preempt huge workload if the incoming is also huge",
       qs,
       {cpu("a1", "a", 2), cpu("b1", "b", 7)},
       cpu("a_incoming", "a", 5),
       {}},
      {"can't preempt 2 smaller workloads if the incoming is huge",
       qs,
       {cpu("b1", "b", 2), cpu("b2", "b", 2), cpu("b3", "b", 3)},
       cpu("a_incoming", "a", 6),
       {}},
      {"prefer to preempt workloads that don't make the target CQ have the biggest share",
       qs,
       {cpu("b1", "b", 2), cpu("b2", "b", 1), cpu("b3", "b", 2), cpu("c1", "c", 1)},
       cpu("a_incoming", "a", 3.5),
       {"b2:InCohortFairSharing"}},
      {"preempt from different cluster queues if the end result has a smaller max share",
       qs,
       {cpu("b1", "b", 2), cpu("b2", "b", 2.5), cpu("c1", "c", 2), cpu("c2", "c", 2.5)},
       cpu("a_incoming", "a", 3.5),
       {"b1:InCohortFairSharing", "c1:InCohortFairSharing"}},
      {"scenario above does not flap",
       qs,
       {cpu("a1", "a", 3.5), cpu("b2", "b", 2.5), cpu("c2", "c", 2.5)},
       cpu("b_incoming", "b", 2),
       {}},
      {"cannot preempt if it would make the candidate CQ go under nominal after preempting one "
       "element",
       qs,
       {cpu("b1", "b", 3), cpu("b2", "b", 3), cpu("c1", "c", 3)},
       cpu("a_incoming", "a", 4),
       {}},
  };
  for (const Case& c : cases) {
    EXPECT_EQ(Preempted(c, /*fair=*/true), c.want) << "Kueue case: " << c.kueue_case;
  }
}

// A queue with one resource group covering CPU: the given flavors, in order.
QueueSpec Flavors(std::string name, std::string cohort,
                  std::vector<std::pair<std::string, Q>> flavors) {
  QueueSpec q;
  q.name = std::move(name);
  q.cohort = std::move(cohort);
  ResourceGroup g;
  g.covered = {QuotaResource::kCpu};
  for (auto& [f, quota] : flavors) g.flavors.push_back({f, {Quota(QuotaResource::kCpu, quota)}});
  q.resource_groups = {g};
  return q;
}

QueueSpec PreemptFirst(QueueSpec q) {
  q.preempt_before_next_flavor = true;
  return q;
}

// The flavor the incoming workload was admitted to, or its victims ("name:Reason").
std::string AdmittedFlavor(const CycleResult& r) {
  if (r.admissions.empty()) return "";
  return r.admissions[0].admitted.flavors[static_cast<int>(QuotaResource::kCpu)];
}

// flavorFungibility.whenCanPreempt, cases from Kueue's pkg/scheduler/scheduler_test.go
// (TestSchedule), pkg/scheduler/flavorassigner/flavorassigner_test.go (TestAssignFlavors) and
// test/integration/singlecluster/scheduler/scheduler_test.go. Where Kueue's flavor assigner test
// gives only a queue's usage, that usage is a running workload of lower priority, so that the
// preemption it leads to has a victim.
TEST(KueueFungibility, WhenCanPreemptCasesFromKueue) {
  auto cpu = [](std::string n, std::string q, int32_t prio, double cpus, std::string flavor) {
    return W{std::move(n),     std::move(q), prio, static_cast<int64_t>(cpus * kCpu), 0, 0, 0,
             std::move(flavor)};
  };
  {
    SCOPED_TRACE(
        "TestSchedule: use second flavor when the first has no preemption candidates; "
        "WhenCanPreempt: Preempt");
    const Case c{"",
                 {PreemptFirst(With(
                     Flavors("other-alpha", "",
                             {{"on-demand", {50 * kCpu, 50 * kCpu}}, {"spot", {100 * kCpu, 0}}}),
                     kLower, kRNever))},
                 {cpu("admitted", "other-alpha", 0, 50, "on-demand")},
                 cpu("new", "other-alpha", 0, 20, ""),
                 {}};
    const CycleResult r = RunCase(c, false);
    EXPECT_EQ(AdmittedFlavor(r), "spot");
    EXPECT_TRUE(r.preemptions.empty());
  }
  {
    SCOPED_TRACE("integration scheduler_test: Should try next flavor if can't preempt on first");
    QueueSpec prod = PreemptFirst(
        With(Flavors("prod-cq", "", {{"on-demand", {2 * kCpu}}, {"spot-untainted", {2 * kCpu}}}),
             kLower, kRNever));
    prod.strategy = QueueingStrategy::kStrictFifo;
    const Case c{
        "",
        {prod},
        {cpu("wl-1", "prod-cq", 0, 1, "on-demand"), cpu("wl-2", "prod-cq", 0, 1, "on-demand")},
        cpu("wl-3", "prod-cq", 0, 1, ""),
        {}};
    const CycleResult r = RunCase(c, false);
    EXPECT_EQ(AdmittedFlavor(r), "spot-untainted");
    EXPECT_TRUE(r.preemptions.empty());
  }
  {
    SCOPED_TRACE("integration scheduler_test: Should preempt before try next flavor");
    auto cases = [&](bool preempt_first) {
      QueueSpec prod =
          With(Flavors("prod-cq", "all",
                       {{"on-demand", {10 * kCpu, 10 * kCpu}}, {"spot-untainted", {11 * kCpu}}}),
               kNever, kRAny);
      if (preempt_first) prod = PreemptFirst(prod);
      QueueSpec dev = Flavors("dev-cq", "all", {{"on-demand", {10 * kCpu, 10 * kCpu}}});
      dev.try_next_flavor_before_borrowing = true;
      return Case{
          "",
          {prod, dev},
          {cpu("wl-1", "dev-cq", 0, 9, "on-demand"), cpu("wl-2", "dev-cq", 1, 9, "on-demand")},
          cpu("wl-3", "prod-cq", 0, 5, ""),
          {}};
    };
    const CycleResult preempt = RunCase(cases(true), false);
    EXPECT_TRUE(preempt.admissions.empty());
    EXPECT_EQ(Victims(preempt), std::set<std::string>{"wl-1:InCohortReclamation"});
    // The default, TryNextFlavor, takes the free flavor instead.
    const CycleResult next = RunCase(cases(false), false);
    EXPECT_EQ(AdmittedFlavor(next), "spot-untainted");
    EXPECT_TRUE(next.preemptions.empty());
  }
  {
    SCOPED_TRACE("TestAssignFlavors: preempt before try next flavor / preempt try next flavor");
    auto cases = [&](bool preempt_first) {
      QueueSpec q =
          With(Flavors("test-clusterqueue", "", {{"one", {10 * kCpu}}, {"two", {10 * kCpu}}}),
               kLower, kRNever);
      if (preempt_first) q = PreemptFirst(q);
      return Case{"",
                  {q},
                  {cpu("usage", "test-clusterqueue", -1, 2, "one")},
                  cpu("main", "test-clusterqueue", 0, 9, ""),
                  {}};
    };
    const CycleResult preempt = RunCase(cases(true), false);
    EXPECT_TRUE(preempt.admissions.empty());
    EXPECT_EQ(Victims(preempt), std::set<std::string>{"usage:InClusterQueue"});
    const CycleResult next = RunCase(cases(false), false);
    EXPECT_EQ(AdmittedFlavor(next), "two");
    EXPECT_TRUE(next.preemptions.empty());
  }
  {
    SCOPED_TRACE(
        "TestAssignFlavors: when borrowing while preemption is needed for flavor one; "
        "WhenCanBorrow=TryNextFlavor");
    // Flavor one needs borrowing and preemption; with whenCanBorrow TryNextFlavor the search
    // goes on to two, which fits within the queue's nominal quota.
    QueueSpec q = PreemptFirst(With(Flavors("test-clusterqueue", "test-cohort",
                                            {{"one", {0, 12 * kCpu}}, {"two", {12 * kCpu}}}),
                                    kNever, kRLower, kBLower));
    q.try_next_flavor_before_borrowing = true;
    QueueSpec lender = Flavors("lender", "test-cohort", {{"one", {12 * kCpu}}});
    const Case c{"",
                 {q, lender},
                 {cpu("other", "lender", -1, 10, "one")},
                 cpu("main", "test-clusterqueue", 0, 12, ""),
                 {}};
    const CycleResult r = RunCase(c, false);
    EXPECT_EQ(AdmittedFlavor(r), "two");
    EXPECT_TRUE(r.preemptions.empty());
  }
}

}  // namespace
}  // namespace tessera::core
