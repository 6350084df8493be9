#include "core/admission.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/quota.h"
#include "cycle_apply.h"
#include "test_cluster.h"

namespace tessera::core {
namespace {

using testing::MakeNode;
using testing::MakePod;
using testing::MustAdd;
using testing::MustScheduler;

constexpr int64_t kGpu = 1000;

ResourceGroup GpuGroup(std::vector<std::pair<std::string, int64_t>> flavor_gpus) {
  ResourceGroup g;
  g.covered = {QuotaResource::kGpu};
  for (auto& [flavor, gpus] : flavor_gpus) {
    g.flavors.push_back({flavor, {{QuotaResource::kGpu, gpus * kGpu, std::nullopt, std::nullopt}}});
  }
  return g;
}

QueueSpec Queue(std::string name, std::string cohort, int64_t nominal_gpus,
                QueueingStrategy strategy = QueueingStrategy::kBestEffortFifo) {
  QueueSpec q;
  q.name = std::move(name);
  q.cohort = std::move(cohort);
  q.resource_groups = {GpuGroup({{"default", nominal_gpus}})};
  q.strategy = strategy;
  return q;
}

// Queues named q, each with a local queue "main" in namespace q.
QueueConfig Config(std::vector<QueueSpec> queues, std::vector<std::string> cohorts = {}) {
  QueueConfig cfg;
  cfg.flavors = {{"default", {}, {}, {}, {}}};
  for (const std::string& c : cohorts) cfg.cohorts.push_back({c, "", {}, 1000});
  for (const QueueSpec& q : queues) cfg.local_queues.push_back({q.name, "main", q.name});
  cfg.queues = std::move(queues);
  cfg.priority_classes = {{"low", 10, PreemptionPolicyKind::kPreemptLowerPriority, false},
                          {"high", 100, PreemptionPolicyKind::kPreemptLowerPriority, false},
                          {"high-never", 100, PreemptionPolicyKind::kNever, false}};
  return cfg;
}

// A job in namespace `ns` (submitted to its local queue "main") of `pods` pods with `gpus` whole
// GPUs each.
Workload Job(std::string ns, std::string name, int gpus, int pods = 1, int64_t created = 0,
             std::string priority = "", int64_t runtime_ms = 0) {
  Workload w;
  w.name = ns + "/" + name;
  w.namespace_name = ns;
  w.local_queue = "main";
  w.priority_class = std::move(priority);
  w.created_ms = created;
  w.estimated_runtime_ms = runtime_ms;
  w.pod_sets.push_back({"worker", MakePod("", {{"nvidia.com/gpu", std::to_string(gpus)}}), pods});
  return w;
}

// A cluster driven through cycles: admissions start running, preempted work goes back to pending.
struct Sim {
  ClusterState state;
  std::vector<Workload> pending;
  std::vector<AdmittedWorkload> running;
  std::vector<Reservation> held;
  std::unique_ptr<Scheduler> placer = MustScheduler("bestfit");
  int64_t now = 0;

  explicit Sim(int nodes, int gpus_per_node = 8) {
    for (int i = 0; i < nodes; ++i)
      MustAdd(state, MakeNode("node-" + std::to_string(i), gpus_per_node));
  }

  CycleResult Cycle(const AdmissionCycle& cycle) {
    CycleResult r = cycle.Run(*placer, state, pending, running, now, held);
    held = r.reservations;
    for (Workload& w : testing::ApplyCycle(r, state, pending, running)) {
      pending.push_back(std::move(w));
    }
    return r;
  }

  // Runs `cycles` cycles at times start, start+1, ...; returns how many preemptions they made.
  int PreemptionsOver(const AdmissionCycle& cycle, int cycles, int64_t start) {
    int n = 0;
    for (int i = 0; i < cycles; ++i) {
      now = start + i;
      n += static_cast<int>(Cycle(cycle).preemptions.size());
    }
    return n;
  }

  // Admits `w` directly (setup), as if an earlier cycle had, at time `at`.
  void Run(const AdmissionCycle& cycle, Workload w, int64_t at = 0) {
    pending = {std::move(w)};
    const int64_t saved = now;
    now = at;
    CycleResult r = Cycle(cycle);
    now = saved;
    ASSERT_EQ(r.admissions.size(), 1u) << r.pending_reasons[0];
  }

  std::vector<std::string> RunningNames() const {
    std::vector<std::string> out;
    for (const AdmittedWorkload& a : running) out.push_back(a.workload.name);
    std::sort(out.begin(), out.end());
    return out;
  }
};

AdmissionCycle MustCycle(const QueueConfig& cfg, CycleOptions o = {}) {
  Result<AdmissionCycle> c = AdmissionCycle::Create(cfg, o);
  EXPECT_TRUE(c.ok()) << c.status().message();
  return std::move(c).value();
}

CycleOptions FairSharing() {
  CycleOptions o;
  o.fair_sharing = true;
  return o;
}

std::vector<std::string> Names(const CycleResult& r) {
  std::vector<std::string> out;
  for (const Admission& a : r.admissions) out.push_back(a.admitted.workload.name);
  return out;
}

std::vector<std::string> Victims(const CycleResult& r) {
  std::vector<std::string> out;
  for (const Preemption& p : r.preemptions) out.push_back(p.victim);
  std::sort(out.begin(), out.end());
  return out;
}

// Queue "a" (local queue a/main) over flavors that each select the nodes labelled
// pool=<flavor>, with the given nominal GPUs, in order.
QueueConfig PoolFlavors(std::vector<std::pair<std::string, int64_t>> flavor_gpus) {
  QueueConfig cfg = Config({});
  cfg.flavors.clear();
  for (const auto& [name, gpus] : flavor_gpus) {
    cfg.flavors.push_back({name, {{"pool", name}}, {}, {}, {}});
  }
  QueueSpec q;
  q.name = "a";
  q.resource_groups = {GpuGroup(std::move(flavor_gpus))};
  cfg.queues = {q};
  cfg.local_queues = {{"a", "main", "a"}};
  return cfg;
}

// A node of `gpus` cards of `model` labelled pool=`pool`.
NodeId AddPoolNode(ClusterState& s, const std::string& name, const std::string& pool,
                   const std::string& model = "H100-80GB", int gpus = 8) {
  NodeSpec n = MakeNode(name, gpus, model);
  n.labels = {{"pool", pool}};
  return MustAdd(s, n);
}

TEST(Admission, QuotaAndRoomBothNeeded) {
  // One queue with 16 GPUs of quota on a cluster of two 4-GPU nodes. An 8-GPU single pod has
  // quota but no node can hold it: it stays pending with the placement reason, and the 4-GPU
  // job behind it (BestEffortFIFO) is admitted on a node. Nothing admitted is unplaceable.
  AdmissionCycle cycle = MustCycle(Config({Queue("a", "", 16)}));
  Sim sim(2, 4);
  sim.pending = {Job("a", "big", 8, 1, 0), Job("a", "small", 4, 1, 1)};
  CycleResult r = sim.Cycle(cycle);
  EXPECT_EQ(Names(r), std::vector<std::string>{"a/small"});
  EXPECT_NE(r.pending_reasons[0].find("0/2 nodes are available"), std::string::npos)
      << r.pending_reasons[0];
  ASSERT_EQ(r.admissions.size(), 1u);
  ASSERT_TRUE(r.admissions[0].admitted.placements[0].has_value());
  EXPECT_EQ(r.admissions[0].admitted.placements[0]->devices.size(), 4u);
}

TEST(Admission, StrictFifoBlocksBestEffortSkips) {
  // Queue quota 4 GPUs. Pending, oldest first: "big" (6 GPUs: over quota) then "small" (2).
  struct Case {
    QueueingStrategy strategy;
    std::vector<std::string> admitted;
    const char* small_reason;
  };
  const Case cases[] = {
      // StrictFIFO: the head cannot be admitted, so nothing behind it is.
      {QueueingStrategy::kStrictFifo, {}, "waiting behind a/big, the head of StrictFIFO queue a"},
      // BestEffortFIFO: "small" fits the quota and goes ahead.
      {QueueingStrategy::kBestEffortFifo, {"a/small"}, ""},
  };
  for (const Case& c : cases) {
    AdmissionCycle cycle = MustCycle(Config({Queue("a", "", 4, c.strategy)}));
    Sim sim(1);
    sim.pending = {Job("a", "big", 6, 1, 0), Job("a", "small", 2, 1, 1)};
    CycleResult r = sim.Cycle(cycle);
    EXPECT_EQ(Names(r), c.admitted);
    EXPECT_EQ(r.pending_reasons[1], c.small_reason);
    EXPECT_EQ(r.pending_reasons[0],
              "queue a: nvidia.com/gpu in flavor default needs 6 GPUs, 4 GPUs available (uses 0 "
              "GPUs of nominal 4 GPUs; no cohort to borrow from)");
  }
}

// Kueue's reservation for a blocked StrictFIFO head (pkg/scheduler: a StrictFIFO ClusterQueue
// that cannot reclaim what it lends keeps its unused nominal quota for its head): queue a
// (nominal 4, StrictFIFO) uses 3 and its head needs 2 more, which its cohort cannot lend; b
// (nominal 0) would borrow a's unused GPU, and does only when a can reclaim it later.
TEST(Admission, StrictFifoHeadHoldsUnusedNominalQuotaWhenItCannotReclaim) {
  for (const ReclaimPreemption reclaim : {ReclaimPreemption::kNever, ReclaimPreemption::kAny}) {
    QueueSpec a = Queue("a", "c", 4, QueueingStrategy::kStrictFifo);
    a.preemption.reclaim_within_cohort = reclaim;
    AdmissionCycle cycle = MustCycle(Config({a, Queue("b", "c", 0)}, {"c"}));
    Sim sim(1);
    sim.pending = {Job("a", "running", 3, 1, 0)};
    ASSERT_EQ(Names(sim.Cycle(cycle)), (std::vector<std::string>{"a/running"}));
    sim.pending = {Job("a", "head", 2, 1, 1), Job("b", "borrower", 1, 1, 2)};
    CycleResult r = sim.Cycle(cycle);
    if (reclaim == ReclaimPreemption::kNever) {
      EXPECT_TRUE(Names(r).empty());
      EXPECT_NE(r.pending_reasons[1].find("queue b"), std::string::npos) << r.pending_reasons[1];
    } else {
      EXPECT_EQ(Names(r), (std::vector<std::string>{"b/borrower"}));
    }
  }
}

TEST(Admission, FairShareOrderFollowsWeights) {
  // Cohort pool 8 GPUs: a and b have 4 each; the cluster has 8 GPUs. a runs 5 (borrows 1),
  // b runs 1. Idle: 2 GPUs. Both submit a 2-GPU job; only one fits.
  // Shares after admission (borrowed / pool 8, divided by weight):
  //   a: (7 - 4) / 8 = 375; b: (3 - 4 < 0) = 0  -> b first with equal weights.
  //   b with weight 0: any borrowing is infinite, but b does not borrow: still 0 -> b first.
  // Make b borrow instead: b runs 5, a runs 1; b's share after = 375, a's = 0 -> a first;
  // with a's weight 0.001 and not borrowing, a stays 0 -> a first.
  struct Case {
    const char* what;
    int a_running, b_running;
    int64_t a_weight, b_weight;
    const char* admitted;
  };
  const Case cases[] = {
      {"a borrows, equal weights", 5, 1, 1000, 1000, "b/j"},
      {"a borrows, b weight 0", 5, 1, 1000, 0, "b/j"},
      {"b borrows", 1, 5, 1000, 1000, "a/j"},
      {"both within quota: older first", 2, 2, 1000, 1000, "a/j"},
  };
  for (const Case& c : cases) {
    QueueSpec a = Queue("a", "pool", 4), b = Queue("b", "pool", 4);
    a.fair_weight_milli = c.a_weight;
    b.fair_weight_milli = c.b_weight;
    AdmissionCycle cycle = MustCycle(Config({a, b}, {"pool"}), FairSharing());
    Sim sim(1);
    if (c.a_running) sim.Run(cycle, Job("a", "run", c.a_running));
    if (c.b_running) sim.Run(cycle, Job("b", "run", c.b_running));
    const int idle = 8 - c.a_running - c.b_running;
    sim.pending = {Job("a", "j", idle == 4 ? 3 : 2, 1, 0), Job("b", "j", idle == 4 ? 3 : 2, 1, 1)};
    CycleResult r = sim.Cycle(cycle);
    EXPECT_EQ(Names(r), std::vector<std::string>{c.admitted}) << c.what;
  }
}

TEST(Admission, GpuEquivalentQuota) {
  // Quota 1 GPU. Shared H100-80GB cards: a 0.3 share charges 300 milli-GPUs; three fit in the
  // quota (900), a fourth does not (needs 300, 100 left).
  // A MIG 1g.10gb slice of an H100-80GB charges max(ceil(1000 x 1/7), 1000 x 1/8) = 143.
  // A time-slice replica of a 4-replica card charges 250.
  struct Case {
    const char* what;
    SharingMode mode;
    api::ResourceList request;
    int jobs;
    int want_admitted;
    int64_t want_charge_each;
  };
  const Case cases[] = {
      {"0.3 shares", SharingMode::kShared, {{"tessera.io/gpu-milli", "300"}}, 4, 3, 300},
      {"1g.10gb slices", SharingMode::kMig, {{"nvidia.com/mig-1g.10gb", "1"}}, 8, 6, 143},
      {"time-slice replicas", SharingMode::kTimeSlice, {{"nvidia.com/gpu.shared", "1"}}, 5, 4, 250},
  };
  for (const Case& c : cases) {
    AdmissionCycle cycle = MustCycle(Config({Queue("a", "", 1)}));
    Sim sim(0);
    NodeSpec n = MakeNode("node-0", 2, "H100-80GB", c.mode);
    if (c.mode == SharingMode::kMig) {
      for (GpuDevice& g : n.gpus) {
        Result<std::vector<MigInstance>> layout =
            PlaceMigLayout(*FindMigGeometry("H100-80GB"), {{{"1g.10gb", 7}}});
        ASSERT_TRUE(layout.ok()) << layout.status().message();
        g.sharing.mig = *layout;
      }
    }
    if (c.mode == SharingMode::kTimeSlice) {
      for (GpuDevice& g : n.gpus) g.sharing.rename = true;
    }
    MustAdd(sim.state, n);
    for (int i = 0; i < c.jobs; ++i) {
      Workload w = Job("a", "j" + std::to_string(i), 1, 1, i);
      w.pod_sets[0].pod = MakePod("", c.request);
      sim.pending.push_back(w);
    }
    CycleResult r = sim.Cycle(cycle);
    EXPECT_EQ(static_cast<int>(r.admissions.size()), c.want_admitted) << c.what;
    // Charges as recomputed from the placements.
    for (const AdmittedWorkload& a : sim.running) {
      EXPECT_EQ(PlacedAmount(sim.state, a.placements)[0], c.want_charge_each) << c.what;
    }
    EXPECT_NE(r.pending_reasons[c.want_admitted].find("queue a: nvidia.com/gpu"), std::string::npos)
        << c.what << ": " << r.pending_reasons[c.want_admitted];
  }
}

TEST(Admission, ReclaimTakesBackLentQuotaMinimally) {
  // Cohort pool 8 on one 8-GPU node: a and b have nominal 4 each. b borrowed all of a's
  // quota: b1 (4 GPUs, admitted t=1), b2 (2, t=2), b3 (2, t=3). a submits a 2-GPU job with
  // reclaimWithinCohort=Any. Candidates (b borrows) in order: most recently admitted first:
  // b3 frees 2 GPUs and 2 of quota: enough. Minimal set = {b3}.
  QueueSpec a = Queue("a", "pool", 4), b = Queue("b", "pool", 4);
  a.preemption.reclaim_within_cohort = ReclaimPreemption::kAny;
  AdmissionCycle cycle = MustCycle(Config({a, b}, {"pool"}));
  Sim sim(1);
  sim.Run(cycle, Job("b", "b1", 4), 1);
  sim.Run(cycle, Job("b", "b2", 2), 2);
  sim.Run(cycle, Job("b", "b3", 2), 3);
  sim.now = 10;
  sim.pending = {Job("a", "j", 2, 1, 5)};
  CycleResult r = sim.Cycle(cycle);
  EXPECT_TRUE(r.admissions.empty());
  EXPECT_EQ(Victims(r), std::vector<std::string>{"b/b3"});
  ASSERT_EQ(r.preemptions.size(), 1u);
  EXPECT_EQ(r.preemptions[0].reason,
            "preempted by a/j (queue a, priority 0): reclaiming quota that queue b borrowed in "
            "the cohort");
  EXPECT_NE(r.pending_reasons[0].find("preempting 1 workload to make room (b/b3)"),
            std::string::npos)
      << r.pending_reasons[0];
  // Next cycle: b3 is gone (back to pending) and a's job runs; b3 cannot come back (b would
  // borrow, and a now uses its quota).
  sim.Cycle(cycle);
  EXPECT_EQ(sim.RunningNames(), (std::vector<std::string>{"a/j", "b/b1", "b/b2"}));
  CycleResult again = sim.Cycle(cycle);
  EXPECT_TRUE(again.preemptions.empty());
  EXPECT_TRUE(again.admissions.empty());
}

TEST(Admission, PreemptionRespectsGangsAndSimulatesFirst) {
  // Two 4-GPU nodes, full of low-priority work in one queue (within-queue LowerPriority):
  // a single s of 4 GPUs (admitted t=1) on one node, a gang g of 4 one-GPU pods (admitted t=2)
  // on the other.
  struct Case {
    const char* what;
    int want_gpus;        // preemptor: one pod of this many GPUs
    int gang_min_member;  // of g
    std::vector<std::string> victims;
  };
  const Case cases[] = {
      // Needs 2 GPUs on one node. Candidates by order: equal priority, most recently admitted
      // first -> g. Evicting g frees its node whole (all 4 pods; never part of a gang).
      {"newest first, whole gang", 2, 4, {"a/g"}},
      // Needs 8 GPUs on one node: impossible even with both evicted; simulated first, so no
      // one is evicted.
      {"unplaceable preemptor evicts nobody", 8, 4, {}},
  };
  for (const Case& c : cases) {
    QueueSpec q = Queue("a", "", 16);
    q.preemption.within_queue = WithinQueuePreemption::kLowerPriority;
    AdmissionCycle cycle = MustCycle(Config({q}));
    Sim sim(2, 4);
    Workload g = Job("a", "g", 1, 4, 0, "low");
    g.min_member = c.gang_min_member;
    sim.Run(cycle, Job("a", "s", 4, 1, 0, "low"), 1);
    sim.Run(cycle, g, 2);
    sim.pending = {Job("a", "urgent", c.want_gpus, 1, 3, "high")};
    CycleResult r = sim.Cycle(cycle);
    EXPECT_EQ(Victims(r), c.victims) << c.what;
    EXPECT_TRUE(r.admissions.empty()) << c.what;
  }
  // Fewest pods first among equals: g and s both admitted at t=1 -> s (1 pod) before g (4).
  QueueSpec q = Queue("a", "", 16);
  q.preemption.within_queue = WithinQueuePreemption::kLowerPriority;
  AdmissionCycle cycle = MustCycle(Config({q}));
  Sim sim(2, 4);
  sim.Run(cycle, Job("a", "g", 1, 4, 0, "low"), 1);
  sim.Run(cycle, Job("a", "s", 4, 1, 0, "low"), 1);
  sim.pending = {Job("a", "urgent", 2, 1, 3, "high")};
  EXPECT_EQ(Victims(sim.Cycle(cycle)), std::vector<std::string>{"a/s"});
  // A preemptor whose priority class says Never does not preempt.
  Sim polite(2, 4);
  polite.Run(cycle, Job("a", "g", 1, 4, 0, "low"), 1);
  polite.Run(cycle, Job("a", "s", 4, 1, 0, "low"), 1);
  polite.pending = {Job("a", "polite", 2, 1, 4, "high-never")};
  CycleResult r = polite.Cycle(cycle);
  EXPECT_TRUE(r.preemptions.empty());
  EXPECT_TRUE(r.admissions.empty());
}

TEST(Admission, NoPreemptionLoopAtFairShare) {
  // Cohort pool 8 GPUs on one 8-GPU node; a and b have 4 each, reclaim Any, fair sharing.
  // a runs 6 (two 3-GPU jobs, share (6-4)/8 = 250); b runs 2 and submits two 1-GPU jobs.
  // Cycle 1: b2 finds no idle quota (the pool is used up); b's share after = 0 < a's 250, so
  // b2 reclaims a2 (most recent). b2 then holds the 3 GPUs of quota a2 gives back, so b3 sees
  // quota but no room yet, and a (now at 3, share 0) is no longer above b: no second victim.
  // Cycle 2: a2 has stopped; b2 and b3 start. From then on a2 (share after 250 > b's 0) may
  // not take anything back: over eleven cycles there is exactly one preemption.
  QueueSpec a = Queue("a", "pool", 4), b = Queue("b", "pool", 4);
  a.preemption.reclaim_within_cohort = ReclaimPreemption::kAny;
  b.preemption.reclaim_within_cohort = ReclaimPreemption::kAny;
  a.preemption.within_queue = WithinQueuePreemption::kLowerOrNewerEqualPriority;
  b.preemption.within_queue = WithinQueuePreemption::kLowerOrNewerEqualPriority;
  AdmissionCycle cycle = MustCycle(Config({a, b}, {"pool"}), FairSharing());
  Sim sim(1);
  sim.Run(cycle, Job("a", "a1", 3), 1);
  sim.Run(cycle, Job("a", "a2", 3), 2);
  sim.Run(cycle, Job("b", "b1", 2), 3);
  sim.pending = {Job("b", "b2", 1, 1, 4), Job("b", "b3", 1, 1, 5)};
  const int preemptions = sim.PreemptionsOver(cycle, 11, 10);
  EXPECT_EQ(preemptions, 1);
  // b ends with 4 GPUs (b1, b2, b3), a with one 3-GPU job; a's other job waits.
  EXPECT_EQ(sim.RunningNames(), (std::vector<std::string>{"a/a1", "b/b1", "b/b2", "b/b3"}));
  ASSERT_EQ(sim.pending.size(), 1u);
  EXPECT_EQ(sim.pending[0].name, "a/a2");
}

TEST(Admission, NoPreemptionLoopWhenBothBorrowEqually) {
  // Cohort with 4 GPUs of its own plus a's and b's 4 each: pool 12, on one 12-GPU node. Both
  // queues run 6 (borrow 2 each: share 2/12 = 166) and each submits a 1-GPU job. Either job
  // would raise its queue's share to 3/12 = 250, above the other's 166, so neither reclaims:
  // without that rule they would evict each other's newest job every cycle.
  QueueSpec a = Queue("a", "pool", 4), b = Queue("b", "pool", 4);
  for (QueueSpec* q : {&a, &b}) q->preemption.reclaim_within_cohort = ReclaimPreemption::kAny;
  QueueConfig cfg = Config({a, b}, {"pool"});
  cfg.cohorts[0].resource_groups = {GpuGroup({{"default", 4}})};
  AdmissionCycle cycle = MustCycle(cfg, FairSharing());
  Sim sim(1, 12);
  sim.Run(cycle, Job("a", "a1", 3), 1);
  sim.Run(cycle, Job("b", "b1", 3), 2);
  sim.Run(cycle, Job("a", "a2", 3), 3);
  sim.Run(cycle, Job("b", "b2", 3), 4);
  sim.pending = {Job("a", "a3", 1, 1, 5), Job("b", "b3", 1, 1, 6)};
  const int preemptions = sim.PreemptionsOver(cycle, 10, 10);
  EXPECT_EQ(preemptions, 0);
  EXPECT_EQ(sim.pending.size(), 2u);
}

TEST(Admission, VictimsQuotaPassesToPreemptorsOfTheSameCycle) {
  // Queue a (no cohort) with quota 4 on an 8-GPU node. Running low-priority l1 (2 GPUs, t=1)
  // and l2 (2 GPUs, t=2): quota used up. Pending high-priority h1 and h2, 1 GPU each.
  // h1 preempts l2 (newest): l2's 2 GPUs of quota go to h1 (1) and leave 1 free, so h2 is
  // admitted on the idle GPUs in the same cycle instead of evicting l1 too.
  QueueSpec q = Queue("a", "", 4);
  q.preemption.within_queue = WithinQueuePreemption::kLowerPriority;
  AdmissionCycle cycle = MustCycle(Config({q}));
  Sim sim(1);
  sim.Run(cycle, Job("a", "l1", 2, 1, 0, "low"), 1);
  sim.Run(cycle, Job("a", "l2", 2, 1, 0, "low"), 2);
  sim.now = 5;
  sim.pending = {Job("a", "h1", 1, 1, 3, "high"), Job("a", "h2", 1, 1, 4, "high")};
  CycleResult r = sim.Cycle(cycle);
  EXPECT_EQ(Victims(r), std::vector<std::string>{"a/l2"});
  EXPECT_EQ(Names(r), std::vector<std::string>{"a/h2"});
}

TEST(Admission, BackfillKeepsTheHeadJobsStart) {
  // Two 8-GPU nodes: r2 (6 GPUs, ends t=1000) runs on one, r1 (4 GPUs, ends t=100) on the
  // other (call it R). Pending in one BestEffortFIFO queue at t=0, oldest first:
  //   big: 8 GPUs on one node -> no room now. Releasing running work in order of end: after r1
  //        (t=100) R is empty -> reserve R, start t=100.
  //   s1: 4 GPUs, runtime 50: ends t=50 <= 100 -> may use R (the other node has 2 free).
  //   s2: 4 GPUs, runtime 500: would delay big -> not on R; the other node is too full.
  //   s3: 2 GPUs, no runtime -> only non-reserved nodes: the other node's 2 free GPUs.
  AdmissionCycle cycle = MustCycle(Config({Queue("a", "", 64), Queue("b", "", 64)}));
  Sim sim(2);
  sim.Run(cycle, Job("a", "r2", 6, 1, 0, "", 1000));
  sim.Run(cycle, Job("a", "r1", 4, 1, 0, "", 100));
  const NodeId r1_node = sim.running[1].placements[0]->node;
  sim.pending = {Job("a", "big", 8, 1, 1), Job("a", "s1", 4, 1, 2, "", 50),
                 Job("a", "s2", 4, 1, 3, "", 500), Job("a", "s3", 2, 1, 4)};
  CycleResult r = sim.Cycle(cycle);
  ASSERT_EQ(r.reservations.size(), 1u);
  EXPECT_EQ(r.reservations[0].workload, "a/big");
  EXPECT_EQ(r.reservations[0].nodes, std::vector<NodeId>{r1_node});
  EXPECT_EQ(r.reservations[0].start_ms, 100);
  EXPECT_EQ(Names(r), (std::vector<std::string>{"a/s1", "a/s3"}));
  for (const Admission& a : r.admissions) {
    const bool on_reserved = a.admitted.placements[0]->node == r1_node;
    EXPECT_EQ(on_reserved, a.admitted.workload.name == "a/s1") << a.admitted.workload.name;
  }
  EXPECT_NE(r.pending_reasons[0].find("reserved 1 node to start at 100 ms"), std::string::npos)
      << r.pending_reasons[0];

  // Without runtimes the head still holds the node it needs, guessing that the oldest work
  // ends first (r1, admitted at t=1 before r2 at t=5): nothing else lands on r1's node.
  Sim blind(2);
  blind.Run(cycle, Job("a", "r2", 6), 5);
  blind.Run(cycle, Job("a", "r1", 4), 1);
  const NodeId blind_r1 = blind.running[1].placements[0]->node;
  blind.pending = {Job("a", "big", 8, 1, 1), Job("a", "s1", 4, 1, 2, "", 50),
                   Job("a", "s3", 2, 1, 4)};
  CycleResult b = blind.Cycle(cycle);
  ASSERT_EQ(b.reservations.size(), 1u);
  EXPECT_FALSE(b.reservations[0].start_ms.has_value());
  EXPECT_EQ(Names(b), std::vector<std::string>{"a/s3"});
  EXPECT_NE(b.admissions[0].admitted.placements[0]->node, blind_r1);
  // The reservation carries over: in the next cycle queue b's job, older than big and so
  // looked at first, still cannot take the reserved node's 4 free GPUs. It reserves the other
  // node for itself (the first blocked job of its queue).
  blind.pending.push_back(Job("b", "early", 4, 1, -5));
  CycleResult b2 = blind.Cycle(cycle);
  EXPECT_TRUE(b2.admissions.empty());
  ASSERT_EQ(b2.reservations.size(), 2u);
  std::map<std::string, std::vector<NodeId>> held;
  for (const Reservation& res : b2.reservations) held[res.workload] = res.nodes;
  EXPECT_EQ(held["a/big"], std::vector<NodeId>{blind_r1});
  ASSERT_EQ(held["b/early"].size(), 1u);
  EXPECT_NE(held["b/early"][0], blind_r1);
}

TEST(Admission, ReservationsNeverInvertPriority) {
  // One 8-GPU node running r (4 GPUs, runtime unknown). big (8 GPUs, low priority) reserves the
  // node. A high-priority 2-GPU job then takes 2 of the 4 free GPUs as if there were no
  // reservation; a low-priority one of unknown runtime does not, and is told which reservation
  // holds the node rather than that the node is unschedulable.
  AdmissionCycle cycle = MustCycle(Config({Queue("a", "", 64)}));
  Sim sim(1);
  sim.Run(cycle, Job("a", "r", 4, 1, 0, "low"), 1);
  sim.pending = {Job("a", "big", 8, 1, 1, "low")};
  sim.now = 10;
  CycleResult first = sim.Cycle(cycle);
  ASSERT_EQ(first.reservations.size(), 1u);
  sim.pending.push_back(Job("a", "urgent", 2, 1, 2, "high"));
  sim.pending.push_back(Job("a", "filler", 2, 1, 3, "low"));
  CycleResult r = sim.Cycle(cycle);
  EXPECT_EQ(Names(r), std::vector<std::string>{"a/urgent"});
  // pending_reasons is parallel to the cycle's pending list: big, urgent, filler.
  EXPECT_NE(r.pending_reasons[2].find("1 node(s) held for a/big until running work ends"),
            std::string::npos)
      << r.pending_reasons[2];
}

TEST(Admission, ReservationOnAFlavorTheJobCanRunOn) {
  // Flavors in order: "whole" (node whole-0, exclusive cards) then "shared" (node shared-0,
  // shared cards); quota 16 GPUs in each. Running: fill-w (8 GPUs, ends t=1000) on whole-0 and
  // fill-s (8 GPUs, ends t=100) on shared-0, so both nodes are full. A pending 0.5-GPU share
  // fits the quota of both flavors but no node now. Its first flavor can never hold a share
  // (exclusive cards), so the reservation is on shared-0, which frees when fill-s ends:
  // start t=100. Reserving under the first flavor whose quota fits would find nothing.
  QueueConfig cfg = Config({});
  cfg.flavors = {{"whole", {{"pool", "whole"}}, {}, {}, {}},
                 {"shared", {{"pool", "shared"}}, {}, {}, {}}};
  QueueSpec q;
  q.name = "a";
  q.resource_groups = {GpuGroup({{"whole", 16}, {"shared", 16}})};
  cfg.queues = {q};
  cfg.local_queues = {{"a", "main", "a"}};
  AdmissionCycle cycle = MustCycle(cfg);
  Sim sim(0);
  NodeSpec w = MakeNode("whole-0", 8);
  w.labels = {{"pool", "whole"}};
  NodeSpec sh = MakeNode("shared-0", 8, "H100-80GB", SharingMode::kShared);
  sh.labels = {{"pool", "shared"}};
  MustAdd(sim.state, w);
  const NodeId shared_id = MustAdd(sim.state, sh);
  sim.Run(cycle, Job("a", "fill-w", 8, 1, 0, "", 1000));
  sim.Run(cycle, Job("a", "fill-s", 8, 1, 1, "", 100));
  ASSERT_EQ(sim.running[1].placements[0]->node, shared_id);
  Workload share = Job("a", "share", 1, 1, 2);
  share.pod_sets[0].pod = MakePod("", {{"tessera.io/gpu-milli", "500"}});
  sim.pending = {share};
  CycleResult r = sim.Cycle(cycle);
  EXPECT_TRUE(r.admissions.empty());
  ASSERT_EQ(r.reservations.size(), 1u) << r.pending_reasons[0];
  EXPECT_EQ(r.reservations[0].nodes, std::vector<NodeId>{shared_id});
  EXPECT_EQ(r.reservations[0].start_ms, 100);

  // A share no node could ever hold (more GPU memory than a card has) reserves nothing.
  Workload huge = Job("a", "huge", 1, 1, 3);
  huge.pod_sets[0].pod =
      MakePod("", {{"tessera.io/gpu-milli", "500"}, {"nvidia.com/gpumem", "200000"}});
  sim.pending = {huge};
  CycleResult h = sim.Cycle(cycle);
  EXPECT_TRUE(h.reservations.empty());
  EXPECT_NE(h.pending_reasons[0].find("does not fit even when running work ends"),
            std::string::npos)
      << h.pending_reasons[0];
}

TEST(Admission, FlavorsInOrderAndPendingReasons) {
  // Two flavors: h100 nodes (label pool=h100) and a100 nodes (pool=a100). Queue quota: h100 4,
  // a100 8. A 6-GPU job does not fit h100's quota and takes a100, landing on an a100 node.
  QueueConfig cfg = PoolFlavors({{"h100", 4}, {"a100", 8}});
  cfg.local_queues.push_back({"a", "dangling", "nope"});
  AdmissionCycle cycle = MustCycle(cfg);
  Sim sim(0);
  AddPoolNode(sim.state, "h100-0", "h100");
  const NodeId a_id = AddPoolNode(sim.state, "a100-0", "a100", "A100-80GB");
  Workload no_lq = Job("a", "x", 1);
  no_lq.local_queue = "missing";
  Workload no_q = Job("a", "y", 1);
  no_q.local_queue = "dangling";
  Workload no_pc = Job("a", "z", 1, 1, 0, "platinum");
  sim.pending = {Job("a", "six", 6), no_lq, no_q, no_pc};
  CycleResult r = sim.Cycle(cycle);
  ASSERT_EQ(Names(r), std::vector<std::string>{"a/six"});
  EXPECT_EQ(r.admissions[0].admitted.flavors[0][0], "a100");
  EXPECT_EQ(r.admissions[0].admitted.placements[0]->node, a_id);
  EXPECT_EQ(r.pending_reasons[1], "local queue a/missing does not exist");
  EXPECT_EQ(r.pending_reasons[2], "queue nope (of local queue a/dangling) does not exist");
  EXPECT_EQ(r.pending_reasons[3], "priority class platinum does not exist");
}

// Flavors per pod set, as Kueue's flavor assigner gives them (pkg/scheduler/flavorassigner:
// pod sets in order, each taking the first flavor of each resource group that fits with the
// requests of the pod sets before it; a pod set gets flavors only for the groups covering what
// it requests). The queue has GPU flavors h100 (quota 4) and a100 (quota 8).
TEST(Admission, FlavorsArePerPodSetAsKueueAssignsThem) {
  AdmissionCycle cycle = MustCycle(PoolFlavors({{"h100", 4}, {"a100", 8}}));
  Sim sim(0);
  const NodeId h_id = AddPoolNode(sim.state, "h100-0", "h100");
  const NodeId a_id = AddPoolNode(sim.state, "a100-0", "a100", "A100-80GB");
  const NodeId cpu_id = AddPoolNode(sim.state, "cpu-0", "cpu", "H100-80GB", 0);
  // Workers (4 x 1 GPU) fill h100's quota; the master's GPU then goes to a100. Before flavors
  // per pod set, the whole job (5 GPUs) went to a100.
  Workload w = Job("a", "split", 1, 4);
  w.pod_sets.insert(w.pod_sets.begin() + 1, {"master", MakePod("", {{"nvidia.com/gpu", "1"}}), 1});
  // A launcher that asks for no GPU gets no GPU flavor, so no flavor's node labels: it may run
  // on the CPU node (kube-scheduler's spread aside, bestfit puts it where it fits).
  PodSpec launcher = MakePod("", {{"cpu", "1"}});
  launcher.node_selector = {{"pool", "cpu"}};
  w.pod_sets.push_back({"launcher", launcher, 1});
  sim.pending = {w};
  CycleResult r = sim.Cycle(cycle);
  ASSERT_EQ(Names(r), std::vector<std::string>{"a/split"}) << r.pending_reasons[0];
  const AdmittedWorkload& ad = r.admissions[0].admitted;
  ASSERT_EQ(ad.flavors.size(), 3u);
  EXPECT_EQ(ad.flavors[0][0], "h100");  // worker
  EXPECT_EQ(ad.flavors[1][0], "a100");  // master
  EXPECT_EQ(ad.flavors[2][0], "");      // launcher: no GPU, no GPU flavor
  for (int i = 0; i < 4; ++i) EXPECT_EQ(ad.placements[i]->node, h_id);
  EXPECT_EQ(ad.placements[4]->node, a_id);
  EXPECT_EQ(ad.placements[5]->node, cpu_id);

  // The next cycle charges each pod set to its own flavor: h100 is full (4 of 4), a100 holds
  // 1 of 8. A 7-GPU job fits a100 only if the split job's workers are not counted there.
  sim.pending = {Job("a", "seven", 7)};
  r = sim.Cycle(cycle);
  ASSERT_EQ(Names(r), std::vector<std::string>{"a/seven"}) << r.pending_reasons[0];
  EXPECT_EQ(r.admissions[0].admitted.flavors[0][0], "a100");
  // And nothing more fits: h100 4/4, a100 8/8.
  sim.pending = {Job("a", "one", 1)};
  r = sim.Cycle(cycle);
  EXPECT_TRUE(r.admissions.empty());
  EXPECT_NE(r.pending_reasons[0].find("in flavor h100 needs 1 GPU, 0 GPUs available"),
            std::string::npos)
      << r.pending_reasons[0];
}

// A pod set whose own node selector excludes the first flavor takes the next; the other pod
// sets keep the first (Kueue: flavors whose node labels contradict a pod set's node selector
// are skipped for that pod set).
TEST(Admission, APodSetsNodeSelectorPicksItsOwnFlavor) {
  AdmissionCycle cycle = MustCycle(PoolFlavors({{"h100", 8}, {"a100", 8}}));
  Sim sim(0);
  const NodeId h_id = AddPoolNode(sim.state, "h100-0", "h100");
  const NodeId a_id = AddPoolNode(sim.state, "a100-0", "a100", "A100-80GB");
  Workload w = Job("a", "mixed", 2, 2);
  PodSpec on_a100 = MakePod("", {{"nvidia.com/gpu", "1"}});
  on_a100.node_selector = {{"pool", "a100"}};
  w.pod_sets.push_back({"eval", on_a100, 1});
  sim.pending = {w};
  CycleResult r = sim.Cycle(cycle);
  ASSERT_EQ(Names(r), std::vector<std::string>{"a/mixed"}) << r.pending_reasons[0];
  const AdmittedWorkload& ad = r.admissions[0].admitted;
  EXPECT_EQ(ad.flavors[0][0], "h100");
  EXPECT_EQ(ad.flavors[1][0], "a100");
  EXPECT_EQ(ad.placements[0]->node, h_id);
  EXPECT_EQ(ad.placements[1]->node, h_id);
  EXPECT_EQ(ad.placements[2]->node, a_id);
}

TEST(Admission, NamespaceQuotaCapsAdmittedWork) {
  // ResourceQuota of namespace a: 3 GPUs. Jobs of 2 GPUs: the first fits, the second would
  // make 4 > 3.
  QueueConfig cfg = Config({Queue("a", "", 64)});
  NamespaceQuota nq;
  nq.namespace_name = "a";
  nq.hard[0] = 3 * kGpu;
  cfg.namespace_quotas = {nq};
  AdmissionCycle cycle = MustCycle(cfg);
  Sim sim(1);
  sim.pending = {Job("a", "j1", 2, 1, 0), Job("a", "j2", 2, 1, 1)};
  CycleResult r = sim.Cycle(cycle);
  EXPECT_EQ(Names(r), std::vector<std::string>{"a/j1"});
  EXPECT_EQ(r.pending_reasons[1],
            "namespace a quota: requests.nvidia.com/gpu 2 GPUs used + 2 GPUs requested exceeds "
            "hard 3 GPUs");
}

TEST(Admission, DeterministicAndCachesEqualShapes) {
  // 200 identical 8-GPU jobs on a full cluster: one placement attempt fails, the other 199
  // reuse that failure; two runs give identical results. (Verdicts are not reused here: the
  // test is of the placement failures kept.)
  AdmissionCycle cycle =
      MustCycle(Config({Queue("a", "", 1000)}), {.backfill = false, .reuse_equal_verdicts = false});
  Sim sim(2, 4);
  for (int i = 0; i < 200; ++i) sim.pending.push_back(Job("a", "j" + std::to_string(i), 8, 1, i));
  CycleResult r1 = cycle.Run(*sim.placer, sim.state, sim.pending, sim.running, 0);
  CycleResult r2 = cycle.Run(*sim.placer, sim.state, sim.pending, sim.running, 0);
  EXPECT_EQ(r1.placement_attempts, 1);
  EXPECT_EQ(r1.placement_cache_hits, 199);
  EXPECT_EQ(r1.pending_reasons, r2.pending_reasons);
  // With no reservation in force, priority and runtime open no nodes: a failure of a
  // high-priority long job covers the shorter low-priority jobs behind it too.
  sim.pending.clear();
  for (int i = 0; i < 100; ++i) {
    sim.pending.push_back(Job("a", "h" + std::to_string(i), 8, 1, i, "high", 100'000));
    sim.pending.push_back(Job("a", "l" + std::to_string(i), 8, 1, i, "low", 100 + i));
  }
  CycleResult r3 = cycle.Run(*sim.placer, sim.state, sim.pending, sim.running, 0);
  EXPECT_EQ(r3.placement_attempts, 1);
  EXPECT_EQ(r3.placement_cache_hits, 199);
  // With verdicts reused: the first job is tried, the second reuses its failure and so
  // changes nothing, and the 198 after it take the second's verdict.
  AdmissionCycle reusing = MustCycle(Config({Queue("a", "", 1000)}), {.backfill = false});
  CycleResult r4 = reusing.Run(*sim.placer, sim.state, sim.pending, sim.running, 0);
  EXPECT_EQ(r4.placement_attempts, 1);
  EXPECT_EQ(r4.placement_cache_hits, 2);
  EXPECT_EQ(r4.reused_verdicts, 197);
  EXPECT_EQ(r4.pending_reasons, r3.pending_reasons);
}

TEST(Admission, PlacementFailuresCoverLongerAndLowerWorkWhileReservationsHold) {
  // The full node is reserved for a's head. A failure covers work of a runtime at least its
  // own and a priority at most its own: the failure of b's high-priority 50 s job covers none
  // of the shorter low-priority jobs behind it, the first of those covers the others.
  AdmissionCycle cycle = MustCycle(Config({Queue("a", "", 1000), Queue("b", "", 1000)}),
                                   {.reuse_equal_verdicts = false});
  Sim sim(1, 8);
  sim.Run(cycle, Job("b", "running", 8, 1, 0, "", 10'000));
  sim.pending = {Job("a", "head", 8, 1, 1, "high", 60'000)};
  CycleResult held = sim.Cycle(cycle);
  ASSERT_EQ(held.reservations.size(), 1u);
  sim.pending.push_back(Job("b", "high", 8, 1, 2, "high", 50'000));
  for (int i = 0; i < 20; ++i) {
    sim.pending.push_back(Job("b", "low" + std::to_string(i), 8, 1, 10 + i, "low", 40'000));
  }
  CycleResult r = sim.Cycle(cycle);
  EXPECT_TRUE(r.admissions.empty());
  EXPECT_EQ(r.placement_cache_hits, 19);
}

}  // namespace
}  // namespace tessera::core
