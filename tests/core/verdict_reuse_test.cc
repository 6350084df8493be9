// CycleOptions::reuse_equal_verdicts: a waiting workload given an equal one's verdict must end
// exactly where trying it would. Random clusters, queues (cohorts, StrictFIFO, preemption
// policies, namespace quotas, fair sharing on and off) and workloads are driven through cycles
// twice, reusing verdicts and not, and every field of every result is compared.
#include <gtest/gtest.h>

#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "core/admission.h"
#include "cycle_apply.h"
#include "test_cluster.h"

namespace tessera::core {
namespace {

using testing::MakeNode;
using testing::MakePod;
using testing::MustAdd;
using testing::MustScheduler;

constexpr int64_t kGpu = 1000;

// Every field of a cycle's result, as text.
std::string Dump(const CycleResult& r) {
  std::ostringstream o;
  auto placements = [&](const std::vector<std::optional<Placement>>& ps) {
    for (const std::optional<Placement>& p : ps) {
      if (!p) {
        o << " -";
        continue;
      }
      o << " n" << p->node.value() << ":";
      for (const DeviceAssignment& d : p->devices) o << int(d.gpu) << "/" << d.milli << ",";
    }
  };
  for (const Admission& a : r.admissions) {
    o << "admit " << a.pending_index << " " << a.admitted.queue << " b" << a.borrowing;
    for (const auto& f : a.admitted.flavors) o << " " << f[0] << "," << f[1] << "," << f[2];
    placements(a.admitted.placements);
    o << "\n";
  }
  for (const Growth& g : r.growths) {
    o << "grow " << g.running_index << " " << g.pod_index << " n" << g.placement.node.value()
      << "\n";
  }
  for (const WaitingPod& w : r.waiting) {
    o << "wait " << w.running_index << " " << w.pod_index << " " << w.count << " " << w.reason
      << "\n";
  }
  for (const Preemption& p : r.preemptions) {
    o << "preempt " << p.running_index << " " << PreemptionCauseName(p.cause) << " " << p.victim
      << " " << p.preemptor << " " << p.reason << "\n";
  }
  for (const Reservation& v : r.reservations) {
    o << "reserve " << v.workload << " " << v.start_ms.value_or(-1);
    for (NodeId n : v.nodes) o << " " << n.value();
    o << "\n";
  }
  for (size_t i = 0; i < r.pending_reasons.size(); ++i) {
    const QueuePlace& q = r.pending_places[i];
    o << "pending " << i << " [" << q.queue << " " << q.position << "/" << q.waiting << " "
      << q.priority << " " << int(q.fits_when_all_end) << "] " << r.pending_reasons[i] << "\n";
  }
  return o.str();
}

QueueConfig RandomQueues(std::mt19937_64& rng) {
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<uint64_t>(n)); };
  QueueConfig cfg;
  cfg.flavors = {{"fast", {{"pool", "fast"}}, {}, {}, {}},
                 {"slow", {{"pool", "slow"}}, {}, {}, {}}};
  cfg.cohorts = {{"c0", "", {}, 1000}, {"c1", "", {}, 1000}};
  const int queues = 3 + pick(3);
  for (int q = 0; q < queues; ++q) {
    QueueSpec s;
    s.name = "q" + std::to_string(q);
    s.cohort = pick(4) == 0 ? "" : "c" + std::to_string(q % 2);
    s.strategy = pick(4) == 0 ? QueueingStrategy::kStrictFifo : QueueingStrategy::kBestEffortFifo;
    ResourceGroup g;
    g.covered = {QuotaResource::kGpu};
    for (const char* f : {"fast", "slow"}) {
      std::optional<int64_t> borrow;
      if (pick(3) == 0) borrow = pick(8) * kGpu;
      g.flavors.push_back(
          {f, {{QuotaResource::kGpu, (2 + pick(12)) * kGpu, borrow, std::nullopt}}});
    }
    s.resource_groups = {g};
    s.preemption.within_queue = static_cast<WithinQueuePreemption>(pick(3));
    s.preemption.reclaim_within_cohort = static_cast<ReclaimPreemption>(pick(3));
    if (s.preemption.reclaim_within_cohort != ReclaimPreemption::kNever) {
      s.preemption.borrow_within_cohort = static_cast<BorrowWithinCohort>(pick(2));
    }
    s.try_next_flavor_before_borrowing = pick(2) == 0;
    s.preempt_before_next_flavor = pick(4) == 0;
    cfg.queues.push_back(s);
    cfg.local_queues.push_back({s.name, "main", s.name});
  }
  cfg.priority_classes = {{"low", 10, PreemptionPolicyKind::kPreemptLowerPriority, false},
                          {"high", 100, PreemptionPolicyKind::kPreemptLowerPriority, false},
                          {"never", 100, PreemptionPolicyKind::kNever, false}};
  if (pick(2) == 0) {
    NamespaceQuota nq;
    nq.namespace_name = "q0";
    nq.hard[0] = (4 + pick(8)) * kGpu;
    cfg.namespace_quotas = {nq};
  }
  return cfg;
}

// A workload of a few shapes, so that many are equal.
Workload RandomJob(std::mt19937_64& rng, int queues, int serial, int64_t now) {
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<uint64_t>(n)); };
  Workload w;
  w.namespace_name = "q" + std::to_string(pick(queues));
  w.name = w.namespace_name + "/j" + std::to_string(serial);
  w.local_queue = "main";
  const char* classes[] = {"", "low", "high", "never"};
  w.priority_class = classes[pick(4)];
  w.created_ms = now + pick(3);
  const int64_t runtimes[] = {0, 3, 10};
  w.estimated_runtime_ms = runtimes[pick(3)];
  const int gpus[] = {1, 2, 4, 8};
  const int pods = pick(3) == 0 ? 2 + pick(2) : 1;
  PodSpec pod = MakePod("", {{"nvidia.com/gpu", std::to_string(gpus[pick(4)])}});
  if (pick(5) == 0) pod.node_selector = {{"pool", pick(2) == 0 ? "fast" : "slow"}};
  w.pod_sets.push_back({"worker", pod, pods});
  if (pods > 1 && pick(2) == 0) w.min_member = pods - 1;
  return w;
}

class Driver {
 public:
  explicit Driver(uint64_t seed) : rng_(seed) {
    for (int i = 0; i < 8; ++i) {
      NodeSpec n = MakeNode("node-" + std::to_string(i), i % 3 == 0 ? 4 : 8);
      n.labels["pool"] = i % 2 == 0 ? "fast" : "slow";
      MustAdd(state_, n);
    }
    cfg_ = RandomQueues(rng_);
  }

  // Runs `cycles` cycles, each with and without verdicts reused, stopping at the first
  // difference.
  void Run(int cycles) {
    const bool fair = rng_() % 2 == 0;
    Result<AdmissionCycle> reusing = AdmissionCycle::Create(cfg_, {.fair_sharing = fair});
    Result<AdmissionCycle> trying =
        AdmissionCycle::Create(cfg_, {.fair_sharing = fair, .reuse_equal_verdicts = false});
    ASSERT_TRUE(reusing.ok()) << reusing.status().message();
    ASSERT_TRUE(trying.ok());
    // A placer each: fragpack learns its workload from the placements it is asked for.
    const char* policy = rng_() % 2 == 0 ? "bestfit" : "fragpack";
    auto placer = MustScheduler(policy);
    auto placer_b = MustScheduler(policy);
    const int queues = static_cast<int>(cfg_.queues.size());
    int serial = 0;
    for (int c = 0; c < cycles; ++c) {
      const int64_t now = c * 4;
      const int arrivals =
          c == 0 ? 60 + static_cast<int>(rng_() % 60) : static_cast<int>(rng_() % 25);
      for (int i = 0; i < arrivals; ++i) pending_.push_back(RandomJob(rng_, queues, serial++, now));
      CycleResult a = reusing->Run(*placer, state_, pending_, running_, now, held_);
      CycleResult b = trying->Run(*placer_b, state_, pending_, running_, now, held_);
      ASSERT_EQ(Dump(a), Dump(b)) << "cycle " << c;
      reused_ += a.reused_verdicts;
      EXPECT_EQ(b.reused_verdicts, 0);
      Apply(a, now);
    }
  }

  int reused() const { return reused_; }

 private:
  void Apply(const CycleResult& r, int64_t now) {
    held_ = r.reservations;
    // Some running work ends.
    std::vector<uint8_t> ends(running_.size(), 0);
    for (uint8_t& e : ends) e = rng_() % 5 == 0 ? 1 : 0;
    for (const Preemption& p : r.preemptions) ends[p.running_index] = 0;
    for (Workload& w : testing::ApplyCycle(r, state_, pending_, running_, ends)) {
      w.created_ms = now;
      pending_.push_back(std::move(w));
    }
  }

  std::mt19937_64 rng_;
  ClusterState state_;
  QueueConfig cfg_;
  std::vector<Workload> pending_;
  std::vector<AdmittedWorkload> running_;
  std::vector<Reservation> held_;
  int reused_ = 0;
};

TEST(VerdictReuse, ResultsEqualThoseOfTryingEveryWorkload) {
  int reused = 0;
  for (uint64_t seed = 1; seed <= 300; ++seed) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    Driver d(seed);
    d.Run(8);
    if (::testing::Test::HasFatalFailure()) return;
    reused += d.reused();
  }
  // The comparison means something only if verdicts were reused.
  EXPECT_GT(reused, 1500);
}

}  // namespace
}  // namespace tessera::core
