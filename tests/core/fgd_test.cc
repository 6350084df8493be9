#include "core/fgd.h"

#include <gtest/gtest.h>

#include "core/devices.h"
#include "core/test_cluster.h"

namespace tessera::core {
namespace {

using testing::MakeNode;
using testing::MakePod;
using testing::MustAdd;

TaskType Share(int32_t milli, int64_t weight) { return {0, 1, milli, {}, weight}; }
TaskType Whole(int32_t n, int64_t weight) { return {0, n, 1000, {}, weight}; }
TaskType CpuOnly(int64_t weight) { return {1000, 0, 0, {}, weight}; }

// Holds `milli` on each card of node `id` (a share per card).
void Hold(ClusterState& s, NodeId id, std::vector<int32_t> milli) {
  Placement p;
  p.node = id;
  for (size_t g = 0; g < milli.size(); ++g) {
    if (milli[g] > 0) {
      p.devices.push_back({static_cast<uint8_t>(g), DeviceKind::kShare, milli[g], 0, 0, 0});
    }
  }
  ASSERT_TRUE(s.Allocate(p).ok());
}

TEST(Fgd, FragmentationMatchesHandComputation) {
  ClusterState s;
  NodeId id = MustAdd(s, MakeNode("n", 4, "G2", SharingMode::kShared, 16384));
  Hold(s, id, {0, 500, 800, 1000});  // free: 1000, 500, 200, 0 (total 1700)
  FragNode f = MakeFragNode(s, id);
  // Share of 300: cards with >= 300 free (1000, 500) are usable; the 200 is fragment.
  EXPECT_EQ(TaskFragmentation(f, Share(300, 1)), 200);
  // One whole card: only the fully free card is usable; 500 + 200 are fragment.
  EXPECT_EQ(TaskFragmentation(f, Whole(1, 1)), 700);
  // Two whole cards cannot run at all: everything free is fragment.
  EXPECT_EQ(TaskFragmentation(f, Whole(2, 1)), 1700);
  // A CPU-only task uses no GPU: all free GPU is fragment from its point of view.
  EXPECT_EQ(TaskFragmentation(f, CpuOnly(1)), 1700);
  // Share of 600: only the free card qualifies.
  EXPECT_EQ(TaskFragmentation(f, Share(600, 1)), 700);
  std::vector<TaskType> w = {Share(300, 3), Whole(1, 2), CpuOnly(1)};
  EXPECT_EQ(NodeFragmentation(f, w), 3 * 200 + 2 * 700 + 1 * 1700);
}

TEST(Fgd, ModelConstraintsAndCpuMakeEverythingFragment) {
  ClusterState s;
  NodeSpec n = MakeNode("n", 2, "T4", SharingMode::kShared, 15360);
  n.allocatable.cpu_milli = 4000;
  NodeId id = MustAdd(s, n);
  FragNode f = MakeFragNode(s, id);
  TaskType v100 = Share(500, 1);
  v100.models = {"V100M16", "V100M32"};
  EXPECT_EQ(TaskFragmentation(f, v100), 2000);
  TaskType hungry = Share(500, 1);
  hungry.cpu_milli = 8000;
  EXPECT_EQ(TaskFragmentation(f, hungry), 2000);
  EXPECT_EQ(TaskFragmentation(f, Share(500, 1)), 0);
}

TEST(Fgd, PicksTheNodeAndCardThatAddLeastFragmentation) {
  // Workload: shares of 500 and single whole cards, equally popular.
  // Node a: free [1000, 1000]. Node b: free [600, 1000].
  // A share of 500 on:
  //   b/GPU0 -> [100, 1000]: share frag 100, whole frag 100 = 200; before 0 + 600 = 600; -400
  //   b/GPU1 -> [600, 500]:  share frag 0,  whole frag 1100 = 1100; +500
  //   a/GPU0 -> [500, 1000]: share frag 0,  whole frag 500  = 500;  +500
  // FGD must choose b/GPU0, while best fit per node would also pick b but spread picks a.
  ClusterState s;
  MustAdd(s, MakeNode("a", 2, "G2", SharingMode::kShared, 16384));
  NodeId b = MustAdd(s, MakeNode("b", 2, "G2", SharingMode::kShared, 16384));
  Hold(s, b, {400, 0});
  SchedulerConfig c;
  c.policy = "fgd";
  c.fgd_workload = {Share(500, 1), Whole(1, 1)};
  auto sched = Scheduler::Create(c).value();
  PlaceOutcome o = sched->Place(s, MakePod("p", {{"tessera.io/gpu-milli", "500"}}));
  ASSERT_TRUE(o.ok) << o.reason;
  EXPECT_EQ(o.placement.node, b);
  EXPECT_EQ(o.placement.devices[0].gpu, 0);
}

TEST(Fgd, KeepsWholeNodesForLargePods) {
  // Two 2-card nodes; arrivals: a 600 share, another 600 share, then a 2-card pod.
  // The second share on a/GPU1 turns a = [400, 1000] into [400, 400]: fragmentation for
  // {share 600, 2 whole cards} goes from 400 + 1400 = 1800 to 800 + 800 = 1600 (-200);
  // on b/GPU0 it goes from 0 to 400 + 1400 = 1800 (+1800). FGD keeps b whole for the 2-card
  // pod; spread puts the shares on both nodes and the 2-card pod cannot run.
  auto run = [](const std::string& policy) {
    ClusterState s;
    MustAdd(s, MakeNode("a", 2, "G2", SharingMode::kShared, 16384));
    MustAdd(s, MakeNode("b", 2, "G2", SharingMode::kShared, 16384));
    SchedulerConfig c;
    c.policy = policy;
    c.percentage_of_nodes_to_score = 100;
    c.fgd_workload = {Share(600, 1), Whole(2, 1)};
    auto sched = Scheduler::Create(c).value();
    int placed = 0;
    placed += sched->Schedule(s, MakePod("s1", {{"tessera.io/gpu-milli", "600"}})).ok;
    placed += sched->Schedule(s, MakePod("s2", {{"tessera.io/gpu-milli", "600"}})).ok;
    placed += sched->Schedule(s, MakePod("w", {{"nvidia.com/gpu", "2"}})).ok;
    return placed;
  };
  EXPECT_EQ(run("fgd"), 3);
  EXPECT_EQ(run("spread"), 2);
}

// The node each policy picks for `pod` on `s` with a fixed workload.
NodeId PickedBy(const std::string& policy, const ClusterState& s, const PodSpec& pod,
                std::vector<TaskType> workload) {
  SchedulerConfig c;
  c.policy = policy;
  c.fgd_workload = std::move(workload);
  auto sched = Scheduler::Create(c).value();
  PlaceOutcome o = sched->Place(s, pod);
  EXPECT_TRUE(o.ok) << o.reason;
  return o.placement.node;
}

// A share of 500 (1 CPU) and two nodes: a, free [1000, 1000] and 64 CPUs; b, free [0, 1000] and
// 1.5 CPUs. Task types: whole cards (weight w) and shares of 450 needing 1 CPU (weight 1).
//   on a: [500, 1000]: whole-card fragmentation 500 x w, the 450 share still fits: 500w.
//   on b: [0, 500], 0.5 CPU left: 500 x w, and the 450 share no longer fits anywhere: +500.
// Mean growth over the workload: a 500w/(w+1), b 500 more than that, over w+1; w = 99: a 495,
// b 500; w = 9: a 450, b 500.
struct CpuPoorNode {
  ClusterState s;
  NodeId a, b;
  PodSpec pod = MakePod("p", {{"tessera.io/gpu-milli", "500"}, {"cpu", "1"}});
  std::vector<TaskType> Workload(int64_t w) const {
    TaskType share = Share(450, 1);
    share.cpu_milli = 1000;
    return {Whole(1, w), share};
  }
  explicit CpuPoorNode(bool poor_first) {
    NodeSpec small = MakeNode("b", 2, "G2", SharingMode::kShared, 16384);
    small.allocatable.cpu_milli = 1500;
    const NodeSpec big = MakeNode("a", 2, "G2", SharingMode::kShared, 16384);
    if (poor_first) b = MustAdd(s, small);
    a = MustAdd(s, big);
    if (!poor_first) b = MustAdd(s, small);
    Hold(s, b, {1000, 0});
  }
};

TEST(Fgd, ScoresInThePapersIntegerSteps) {
  // CpuPoorNode with b listed first. w = 99: the paper's scores floor(100 x sigmoid(-0.495)) =
  // floor(100 x sigmoid(-0.5)) = 37 tie and the first node, b, wins. w = 9: a 38, b 37: a.
  CpuPoorNode c(/*poor_first=*/true);
  EXPECT_EQ(PickedBy("fgd", c.s, c.pod, c.Workload(99)), c.b);
  EXPECT_EQ(PickedBy("fgd", c.s, c.pod, c.Workload(9)), c.a);
}

TEST(FragPack, FillsTheFullerNodeWhenFragmentationTies) {
  // A share of 500 adds no fragmentation for a workload of such shares on either node; FGD takes
  // the first node, fragpack the one left fuller (b: one of two cards already held).
  ClusterState s;
  NodeId a = MustAdd(s, MakeNode("a", 2, "G2", SharingMode::kShared, 16384));
  NodeId b = MustAdd(s, MakeNode("b", 2, "G2", SharingMode::kShared, 16384));
  Hold(s, b, {1000, 0});
  const PodSpec pod = MakePod("p", {{"tessera.io/gpu-milli", "500"}});
  EXPECT_EQ(PickedBy("fgd", s, pod, {Share(500, 1)}), a);
  EXPECT_EQ(PickedBy("fragpack", s, pod, {Share(500, 1)}), b);
}

TEST(FragPack, TreatsDifferencesWithinTheToleranceAlike) {
  // CpuPoorNode with a listed first. w = 99: FGD takes a (495 and 500 tie, a is first); 5 is
  // within fragpack's tolerance (3% of 500 = 15), so it fills b. w = 9: 50 is beyond the
  // tolerance and fragpack takes a too.
  CpuPoorNode c(/*poor_first=*/false);
  EXPECT_EQ(PickedBy("fgd", c.s, c.pod, c.Workload(99)), c.a);
  EXPECT_EQ(PickedBy("fragpack", c.s, c.pod, c.Workload(99)), c.b);
  EXPECT_EQ(PickedBy("fragpack", c.s, c.pod, c.Workload(9)), c.a);
}

TEST(FragPack, KeepsAScarceModelForThePodsPinnedToIt) {
  // Node t (T4): free [0, 1000]; node g (G2): free [1000, 1000]. An unpinned whole card.
  // Without pinned demand fragpack fills t, the fuller node. When 1% of the workload needs a T4,
  // taking t's last free card crowds that demand out: T4 contention 0.99 x 1000/3000 (everyone)
  // + 0.01 x 1000/1000 (the pinned type) = 0.34 against G2's 0.33, and 300 x 1000 x 0.01 =
  // 3000 milli-GPUs of cost is far beyond the tolerance, so it goes to g.
  ClusterState s;
  NodeId t = MustAdd(s, MakeNode("t", 2, "T4", SharingMode::kShared, 15360));
  NodeId g = MustAdd(s, MakeNode("g", 2, "G2", SharingMode::kShared, 16384));
  Hold(s, t, {1000, 0});
  const PodSpec pod = MakePod("p", {{"nvidia.com/gpu", "1"}});
  TaskType pinned = Whole(1, 1);
  pinned.models = {"T4"};
  EXPECT_EQ(PickedBy("fragpack", s, pod, {Whole(1, 99)}), t);
  EXPECT_EQ(PickedBy("fragpack", s, pod, {Whole(1, 99), pinned}), g);
}

TEST(FragPack, LeavesCpuForTheFreeCardsOfACpuPoorNode) {
  // Node p: 4 cards, 8 CPUs; node r: 4 cards, 64 CPUs. Workload: single cards with 2 CPUs, so
  // 2 millicores per milli-GPU. A card with 4 CPUs adds no fragmentation on either node (3 cards
  // and at least 4 CPUs stay free, enough for the type) and leaves both equally full, so FGD
  // takes p, the first. On p it would leave 3 free cards with CPU for 2 of them: 1,000 stranded
  // milli-GPUs, a cost of 250 beyond the tolerance (30), so fragpack takes r. A card with 1 CPU
  // strands nothing (3,000 milli-GPUs, CPU for 3,500): p.
  ClusterState s;
  NodeSpec poor = MakeNode("p", 4, "G2", SharingMode::kShared, 16384);
  poor.allocatable.cpu_milli = 8000;
  NodeId p = MustAdd(s, poor);
  NodeSpec rich = MakeNode("r", 4, "G2", SharingMode::kShared, 16384);
  rich.allocatable.cpu_milli = 64000;
  NodeId r = MustAdd(s, rich);
  TaskType card = Whole(1, 1);
  card.cpu_milli = 2000;
  const PodSpec hungry = MakePod("h", {{"nvidia.com/gpu", "1"}, {"cpu", "4"}});
  const PodSpec light = MakePod("l", {{"nvidia.com/gpu", "1"}, {"cpu", "1"}});
  EXPECT_EQ(PickedBy("fgd", s, hungry, {card}), p);
  EXPECT_EQ(PickedBy("fragpack", s, hungry, {card}), r);
  EXPECT_EQ(PickedBy("fragpack", s, light, {card}), p);
}

TEST(Fgd, WorkloadCpuPerGpuCountsCpuOnlyTypes) {
  TaskType card = Whole(1, 1);
  card.cpu_milli = 2000;
  // (2,000 + 2 x 1,000 millicores) / 1,000 milli-GPUs.
  EXPECT_DOUBLE_EQ(FragmentationMemo({card, CpuOnly(2)}).cpu_per_gpu_milli(), 4.0);
  EXPECT_DOUBLE_EQ(FragmentationMemo({CpuOnly(2)}).cpu_per_gpu_milli(), 0.0);
}

// `plugin`'s raw scores, contention applied, for `pod` on every candidate of `s`.
std::vector<int64_t> AdjustedScores(ScorePlugin& plugin, const ClusterState& s,
                                    const PodSpec& pod) {
  CycleState cycle(pod, 0, 0, nullptr);
  EXPECT_TRUE(dynamic_cast<PreFilterPlugin&>(plugin).PreFilter(cycle, s).ok());
  const DeviceRequest req = MakeDeviceRequest(pod);
  std::vector<Candidate> candidates;
  for (uint32_t i = 0; i < s.size(); ++i) ProposeCandidates(req, s, NodeId(i), candidates);
  std::vector<int64_t> raw;
  for (const Candidate& c : candidates) raw.push_back(plugin.Score(cycle, s, c));
  plugin.AdjustScores(cycle, s, candidates, raw);
  return raw;
}

TEST(FragPack, KeepsModelContentionUpToDateThroughEveryChange) {
  // One plugin lives through allocations, a GPU failure, its repair and releases; after each, its
  // scores (whose contention it keeps from the nodes that changed) must equal those of a plugin
  // created anew, which counts every node, and the T4 candidates' scores must move as T4
  // capacity is taken and given back.
  ClusterState s;
  std::vector<NodeId> t4;
  for (int i = 0; i < 3; ++i) {
    t4.push_back(
        MustAdd(s, MakeNode("t" + std::to_string(i), 2, "T4", SharingMode::kShared, 15360)));
  }
  MustAdd(s, MakeNode("g", 4, "G2", SharingMode::kShared, 16384));
  TaskType pinned = Share(500, 1);
  pinned.models = {"T4"};
  const std::vector<TaskType> workload = {Share(500, 4), Whole(1, 4), pinned};
  std::unique_ptr<ScorePlugin> kept = MakeFragPackScore(workload);
  const PodSpec pod = MakePod("p", {{"tessera.io/gpu-milli", "500"}});
  auto check = [&](const char* step) {
    SCOPED_TRACE(step);
    std::unique_ptr<ScorePlugin> fresh = MakeFragPackScore(workload);
    const std::vector<int64_t> want = AdjustedScores(*fresh, s, pod);
    EXPECT_EQ(AdjustedScores(*kept, s, pod), want);
    return want;
  };
  const std::vector<int64_t> at_start = check("start");
  Hold(s, t4[0], {1000, 500});
  const std::vector<int64_t> after_hold = check("after holding 1,500 on a T4 node");
  EXPECT_NE(after_hold, at_start);
  ASSERT_TRUE(s.SetGpuHealth(t4[1], 0, GpuHealth::kUnhealthy).ok());
  check("after a T4 card failed");
  ASSERT_TRUE(s.SetGpuHealth(t4[1], 0, GpuHealth::kHealthy).ok());
  EXPECT_EQ(check("after it was repaired"), after_hold);
  Placement held;
  held.node = t4[0];
  held.devices = {{0, DeviceKind::kShare, 1000, 0, 0, 0}, {1, DeviceKind::kShare, 500, 0, 0, 0}};
  ASSERT_TRUE(s.Release(held).ok());
  EXPECT_EQ(check("after the release"), at_start);
  // A copy that changed one node since the plugin saw the original, then the original again:
  // the plugin must follow each state, not the changes it last counted.
  ClusterState copy = s;
  Hold(copy, t4[2], {1000});
  std::unique_ptr<ScorePlugin> fresh = MakeFragPackScore(workload);
  EXPECT_EQ(AdjustedScores(*kept, copy, pod), AdjustedScores(*fresh, copy, pod));
  EXPECT_NE(AdjustedScores(*kept, copy, pod), at_start);
  EXPECT_EQ(check("back on the original"), at_start);
}

TEST(FragPack, LearnsTheWorkloadWithoutOne) {
  // With no workload given it learns from the pods it places, as FGD does, and still packs.
  ClusterState s;
  MustAdd(s, MakeNode("a", 2, "G2", SharingMode::kShared, 16384));
  NodeId b = MustAdd(s, MakeNode("b", 2, "G2", SharingMode::kShared, 16384));
  Hold(s, b, {1000, 0});
  EXPECT_EQ(PickedBy("fragpack", s, MakePod("p", {{"nvidia.com/gpu", "1"}}), {}), b);
}

TEST(Fgd, TypicalTypesCoverTheAskedShare) {
  std::vector<TaskType> seen = {Share(500, 60), Whole(1, 30), Share(250, 6), CpuOnly(4)};
  auto t = TypicalTaskTypes(seen, 90);
  ASSERT_EQ(t.size(), 2u);
  EXPECT_EQ(t[0].gpu_milli, 500);
  EXPECT_EQ(TypicalTaskTypes(seen, 100).size(), 4u);
}

}  // namespace
}  // namespace tessera::core
