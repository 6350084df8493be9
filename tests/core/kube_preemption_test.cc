// Cases ported from kube-scheduler's default preemption tests (kubernetes/kubernetes,
// pkg/scheduler/framework/plugins/defaultpreemption/default_preemption_test.go:
// TestSelectNodesForPreemption and TestPickOneNodeForPreemption), run against the queue of
// work outside queues (PreemptionStyle::kKubeScheduler). Each case keeps kube-scheduler's
// name, nodes, running pods (each a one-pod workload here), incoming pod and expected victims
// or chosen node. Sizes map one to one: kube-scheduler's nodes hold 5 x the default request
// (100 millicores, 200 MB); small, medium, large and very large pods ask for 1, 2, 3 and 5
// of them. Start times become admission times. Cases about plugins Tessera does not have
// (inter-pod affinity, PodDisruptionBudgets, extenders, fake filters) are not ported.
#include <gtest/gtest.h>

#include <map>
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

constexpr int32_t kNeg = -100, kLow = 0, kMid = 100, kHigh = 1000, kVeryHigh = 10000;
enum Size { kSmall = 1, kMedium = 2, kLarge = 3, kVeryLarge = 5 };

struct P {
  std::string name;
  Size size;
  int32_t priority;
  std::string node;        // running pods: where
  int64_t started_ms = 0;  // kube-scheduler's StartTime
};

Workload MakeWorkload(const P& p) {
  Workload w;
  w.name = p.name;
  w.namespace_name = "default";
  w.local_queue = "unqueued";
  w.priority_class = "p" + std::to_string(p.priority);
  w.pod_sets.push_back({"main",
                        MakePod("", {{"cpu", std::to_string(100 * p.size) + "m"},
                                     {"memory", std::to_string(200 * p.size) + "Mi"}}),
                        1});
  return w;
}

struct Outcome {
  std::set<std::string> victims;
  std::set<std::string> nodes;  // where the victims ran
};

Outcome Preempt(const std::vector<std::string>& node_names, const std::vector<P>& running_pods,
                const P& incoming,
                PreemptionPolicyKind policy = PreemptionPolicyKind::kPreemptLowerPriority) {
  QueueConfig cfg;
  QueueSpec q;
  q.name = "unqueued";
  q.preemption.style = PreemptionStyle::kKubeScheduler;
  q.preemption.within_queue = WithinQueuePreemption::kLowerPriority;
  cfg.queues = {q};
  cfg.local_queues = {{"default", "unqueued", "unqueued"}};
  for (int32_t p : {kNeg, kLow, kMid, kHigh, kVeryHigh}) {
    cfg.priority_classes.push_back(
        {"p" + std::to_string(p), p,
         p == incoming.priority ? policy : PreemptionPolicyKind::kPreemptLowerPriority, false});
  }
  Result<AdmissionCycle> cycle = AdmissionCycle::Create(cfg, {});
  EXPECT_TRUE(cycle.ok()) << cycle.status().message();
  if (!cycle.ok()) return {};
  ClusterState state;
  std::map<std::string, NodeId> ids;
  for (const std::string& n : node_names) {
    NodeSpec spec = MakeNode(n, 0);
    spec.allocatable = {500, 1000};
    ids[n] = MustAdd(state, spec);
  }
  std::vector<AdmittedWorkload> running;
  for (const P& p : running_pods) {
    AdmittedWorkload a;
    a.workload = MakeWorkload(p);
    a.queue = "unqueued";
    a.priority = p.priority;
    a.admitted_ms = p.started_ms;
    Placement pl;
    pl.node = ids.at(p.node);
    pl.resources = {100 * p.size, 200 * p.size};
    EXPECT_TRUE(state.Allocate(pl).ok()) << p.name;
    a.placements = {pl};
    running.push_back(std::move(a));
  }
  std::unique_ptr<Scheduler> placer = MustScheduler("bestfit");
  const std::vector<Workload> pending = {MakeWorkload(incoming)};
  CycleResult r = cycle->Run(*placer, state, pending, running, /*now_ms=*/1'000'000);
  EXPECT_TRUE(r.admissions.empty()) << "the incoming pod fits without preemption";
  Outcome out;
  for (const Preemption& pr : r.preemptions) {
    EXPECT_EQ(pr.cause, PreemptionCause::kPreemptionByScheduler);
    out.victims.insert(pr.victim);
    out.nodes.insert(state.node(running[pr.running_index].placements[0]->node).name);
  }
  return out;
}

// TestSelectNodesForPreemption: the victims kube-scheduler finds on the node it then picks.
TEST(KubePreemption, SelectVictimsOnNode) {
  {
    SCOPED_TRACE("a pod that fits on both machines when lower priority pods are preempted");
    Outcome o = Preempt({"machine1", "machine2"},
                        {{"a", kLarge, kMid, "machine1"}, {"b", kLarge, kMid, "machine2"}},
                        {"new", kLarge, kHigh, ""});
    EXPECT_EQ(o.victims.size(), 1u);
    EXPECT_TRUE(o.victims.count("a") + o.victims.count("b") == 1);
  }
  {
    SCOPED_TRACE(
        "a pod that would fit on the machines, but other pods running are higher "
        "priority");
    Outcome o = Preempt({"machine1", "machine2"},
                        {{"a", kLarge, kMid, "machine1"}, {"b", kLarge, kMid, "machine2"}},
                        {"new", kLarge, kLow, ""});
    EXPECT_TRUE(o.victims.empty());
  }
  {
    SCOPED_TRACE("medium priority pod is preempted, but lower priority one stays as it is small");
    // machine1's victims are {b} and machine2's {c}: one victim of priority mid each, so the
    // node with the lowest id wins.
    Outcome o = Preempt({"machine1", "machine2"},
                        {{"a", kSmall, kLow, "machine1"},
                         {"b", kLarge, kMid, "machine1"},
                         {"c", kLarge, kMid, "machine2"}},
                        {"new", kLarge, kHigh, ""});
    EXPECT_EQ(o.victims, (std::set<std::string>{"b"}));
  }
  {
    SCOPED_TRACE("mixed priority pods are preempted");
    Outcome o = Preempt({"machine1", "machine2"},
                        {{"a", kSmall, kMid, "machine1"},
                         {"b", kSmall, kLow, "machine1"},
                         {"c", kMedium, kMid, "machine1"},
                         {"d", kSmall, kHigh, "machine1"},
                         {"e", kLarge, kHigh, "machine2"}},
                        {"new", kLarge, kHigh, ""});
    EXPECT_EQ(o.victims, (std::set<std::string>{"b", "c"}));
  }
  {
    SCOPED_TRACE(
        "mixed priority pods are preempted, pick later StartTime one when priorities "
        "are equal");
    Outcome o = Preempt({"machine1", "machine2"},
                        {{"a", kSmall, kLow, "machine1", 7},
                         {"b", kSmall, kLow, "machine1", 6},
                         {"c", kMedium, kMid, "machine1", 5},
                         {"d", kSmall, kHigh, "machine1", 4},
                         {"e", kLarge, kHigh, "machine2", 3}},
                        {"new", kLarge, kHigh, ""});
    EXPECT_EQ(o.victims, (std::set<std::string>{"a", "c"}));
  }
}

// TestPickOneNodeForPreemption: the node whose victims cost least.
TEST(KubePreemption, PickOneNodeForPreemption) {
  const std::vector<std::string> three = {"machine1", "machine2", "machine3"};
  struct Case {
    std::string name;
    std::vector<std::string> nodes;
    std::vector<P> pods;
    P incoming;
    std::set<std::string> want;  // any of these nodes
  };
  const std::vector<Case> cases = {
      {"a pod that fits on both machines when lower priority pods are preempted",
       {"machine1", "machine2"},
       {{"m1.1", kLarge, kMid, "machine1"}, {"m2.1", kLarge, kMid, "machine2"}},
       {"new", kLarge, kHigh, ""},
       {"machine1", "machine2"}},
      {"machine with min highest priority pod is picked",
       three,
       {{"m1.1", kMedium, kMid, "machine1"},
        {"m1.2", kLarge, kMid, "machine1"},
        {"m2.1", kMedium, kMid, "machine2"},
        {"m2.2", kMedium, kLow, "machine2"},
        {"m3.1", kMedium, kLow, "machine3"},
        {"m3.2", kMedium, kLow, "machine3"}},
       {"new", kVeryLarge, kHigh, ""},
       {"machine3"}},
      {"when highest priorities are the same, minimum sum of priorities is picked",
       three,
       {{"m1.1", kMedium, kMid, "machine1"},
        {"m1.2", kLarge, kMid, "machine1"},
        {"m2.1", kLarge, kMid, "machine2"},
        {"m2.2", kMedium, kLow, "machine2"},
        {"m3.1", kMedium, kMid, "machine3"},
        {"m3.2", kMedium, kMid, "machine3"}},
       {"new", kVeryLarge, kHigh, ""},
       {"machine2"}},
      {"when highest priority and sum are the same, minimum number of pods is picked",
       three,
       {{"m1.1", kSmall, kMid, "machine1"},
        {"m1.2", kSmall, kNeg, "machine1"},
        {"m1.3", kSmall, kMid, "machine1"},
        {"m1.4", kSmall, kNeg, "machine1"},
        {"m2.1", kLarge, kMid, "machine2"},
        {"m2.2", kMedium, kNeg, "machine2"},
        {"m3.1", kMedium, kMid, "machine3"},
        {"m3.2", kSmall, kNeg, "machine3"},
        {"m3.3", kSmall, kLow, "machine3"}},
       {"new", kVeryLarge, kHigh, ""},
       {"machine2"}},
      {"sum of adjusted priorities is considered",
       three,
       {{"m1.1", kSmall, kMid, "machine1"},
        {"m1.2", kSmall, kNeg, "machine1"},
        {"m1.3", kSmall, kNeg, "machine1"},
        {"m2.1", kLarge, kMid, "machine2"},
        {"m2.2", kMedium, kNeg, "machine2"},
        {"m3.1", kMedium, kMid, "machine3"},
        {"m3.2", kSmall, kNeg, "machine3"},
        {"m3.3", kSmall, kLow, "machine3"}},
       {"new", kVeryLarge, kHigh, ""},
       {"machine2"}},
      // kube-scheduler's m3.4 (medium, low) is left out: with it machine3 would hold 600 of its
      // 500 millicores, which Tessera's cluster state refuses; machine3 still ties machine1
      // on every criterion but the node order.
      {"non-overlapping lowest high priority, sum priorities, and number of pods",
       {"machine1", "machine2", "machine3", "machine4"},
       {{"m1.1", kSmall, kMid, "machine1"},
        {"m1.2", kSmall, kLow, "machine1"},
        {"m1.3", kSmall, kLow, "machine1"},
        {"m2.1", kLarge, kHigh, "machine2"},
        {"m3.1", kMedium, kMid, "machine3"},
        {"m3.2", kSmall, kLow, "machine3"},
        {"m3.3", kSmall, kLow, "machine3"},
        {"m4.1", kMedium, kMid, "machine4"},
        {"m4.2", kSmall, kMid, "machine4"},
        {"m4.3", kSmall, kMid, "machine4"},
        {"m4.4", kSmall, kNeg, "machine4"}},
       {"new", kVeryLarge, kVeryHigh, ""},
       {"machine1"}},
      {"same priority, same number of victims, different start time for each machine's pod",
       three,
       {{"m1.1", kMedium, kMid, "machine1", 3},
        {"m1.2", kMedium, kMid, "machine1", 3},
        {"m2.1", kMedium, kMid, "machine2", 4},
        {"m2.2", kMedium, kMid, "machine2", 4},
        {"m3.1", kMedium, kMid, "machine3", 2},
        {"m3.2", kMedium, kMid, "machine3", 2}},
       {"new", kVeryLarge, kHigh, ""},
       {"machine2"}},
      {"same priority, same number of victims, different start time for all pods",
       three,
       {{"m1.1", kMedium, kMid, "machine1", 5},
        {"m1.2", kMedium, kMid, "machine1", 3},
        {"m2.1", kMedium, kMid, "machine2", 6},
        {"m2.2", kMedium, kMid, "machine2", 2},
        {"m3.1", kMedium, kMid, "machine3", 4},
        {"m3.2", kMedium, kMid, "machine3", 7}},
       {"new", kVeryLarge, kHigh, ""},
       {"machine3"}},
      {"different priority, same number of victims, different start time for all pods",
       three,
       {{"m1.1", kMedium, kLow, "machine1", 5},
        {"m1.2", kMedium, kMid, "machine1", 3},
        {"m2.1", kMedium, kMid, "machine2", 7},
        {"m2.2", kMedium, kLow, "machine2", 2},
        {"m3.1", kMedium, kLow, "machine3", 4},
        {"m3.2", kMedium, kMid, "machine3", 6}},
       {"new", kVeryLarge, kHigh, ""},
       {"machine2"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    Outcome o = Preempt(c.nodes, c.pods, c.incoming);
    ASSERT_EQ(o.nodes.size(), 1u);
    EXPECT_TRUE(c.want.contains(*o.nodes.begin())) << *o.nodes.begin();
  }
}

// kube-scheduler's PodEligibleToPreemptOthers: a pod whose priority class says
// preemptionPolicy: Never waits instead (TestPreempt, "preemption with PreemptNever").
TEST(KubePreemption, PreemptNeverWaits) {
  Outcome o = Preempt({"machine1"}, {{"a", kLarge, kLow, "machine1"}}, {"new", kLarge, kHigh, ""},
                      PreemptionPolicyKind::kNever);
  EXPECT_TRUE(o.victims.empty());
}

// kube-scheduler preempts only pods of strictly lower priority.
TEST(KubePreemption, EqualPriorityIsNeverAVictim) {
  Outcome o = Preempt({"machine1"}, {{"a", kLarge, kHigh, "machine1"}}, {"new", kLarge, kHigh, ""});
  EXPECT_TRUE(o.victims.empty());
}

}  // namespace
}  // namespace tessera::core
