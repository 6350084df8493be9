#include "core/scheduler.h"

#include <gtest/gtest.h>

#include <set>

#include "core/test_cluster.h"

namespace tessera::core {
namespace {

using testing::GpuIndices;
using testing::MakeGpu;
using testing::MakeNode;
using testing::MakePod;
using testing::MustAdd;
using testing::MustScheduler;

// A node with one card of each sharing mode, A100-40GB.
NodeSpec MixedNode(std::string name) {
  NodeSpec n;
  n.name = std::move(name);
  n.allocatable = {64000, 512 * 1024};
  n.gpus = {MakeGpu(0, "A100-40GB", 40960, SharingMode::kExclusive),
            MakeGpu(1, "A100-40GB", 40960, SharingMode::kTimeSlice),
            MakeGpu(2, "A100-40GB", 40960, SharingMode::kShared),
            MakeGpu(3, "A100-40GB", 40960, SharingMode::kMig)};
  n.gpus[1].sharing.rename = true;
  const MigGeometry* geo = FindMigGeometry("A100-40GB");
  n.gpus[3].sharing.mig = PlaceMigLayout(*geo,
                                         std::vector<std::pair<std::string, int>>{
                                             {"3g.20gb", 1}, {"2g.10gb", 1}, {"1g.5gb", 2}})
                              .value();
  return n;
}

struct KindCase {
  const char* name;
  api::ResourceList limits;
  DeviceKind kind;
  std::vector<int> gpus;  // expected GPU indices
};

class RequestKindTest : public ::testing::TestWithParam<KindCase> {};

TEST_P(RequestKindTest, LandsOnTheRightKindOfCard) {
  const KindCase& c = GetParam();
  ClusterState s;
  MustAdd(s, MixedNode("mixed"));
  auto sched = MustScheduler();
  PlaceOutcome o = sched->Schedule(s, MakePod(c.name, c.limits));
  ASSERT_TRUE(o.ok) << o.reason;
  ASSERT_FALSE(o.placement.devices.empty());
  for (const DeviceAssignment& d : o.placement.devices) EXPECT_EQ(d.kind, c.kind);
  EXPECT_EQ(GpuIndices(s, o.placement), c.gpus);
}

INSTANTIATE_TEST_SUITE_P(
    Kinds, RequestKindTest,
    ::testing::Values(
        // Whole cards may use an exclusive card or a free shared card.
        KindCase{"whole", {{"nvidia.com/gpu", "1"}}, DeviceKind::kWhole, {0}},
        KindCase{"whole2", {{"nvidia.com/gpu", "2"}}, DeviceKind::kWhole, {0, 2}},
        KindCase{"milli", {{"tessera.io/gpu-milli", "300"}}, DeviceKind::kShare, {2}},
        KindCase{"cgpu-mem", {{"aliyun.com/gpu-mem", "4"}}, DeviceKind::kShare, {2}},
        KindCase{"cgpu-core",
                 {{"aliyun.com/gpu-mem", "8"}, {"aliyun.com/gpu-core", "50"}},
                 DeviceKind::kShare,
                 {2}},
        KindCase{"hami",
                 {{"nvidia.com/gpumem", "4000"}, {"nvidia.com/gpucores", "30"}},
                 DeviceKind::kShare,
                 {2}},
        KindCase{"mig", {{"nvidia.com/mig-1g.5gb", "1"}}, DeviceKind::kMigInstance, {3}},
        KindCase{"mig2", {{"nvidia.com/mig-1g.5gb", "2"}}, DeviceKind::kMigInstance, {3, 3}},
        KindCase{"replica", {{"nvidia.com/gpu.shared", "1"}}, DeviceKind::kReplica, {1}}));

TEST(Scheduler, ShareSizesFollowTheRequest) {
  ClusterState s;
  MustAdd(s, MixedNode("mixed"));
  auto sched = MustScheduler();
  PlaceOutcome o = sched->Schedule(
      s, MakePod("p", {{"aliyun.com/gpu-mem", "8"}, {"aliyun.com/gpu-core", "50"}}));
  ASSERT_TRUE(o.ok) << o.reason;
  EXPECT_EQ(o.placement.devices[0].milli, 500);
  EXPECT_EQ(o.placement.devices[0].memory_mib, 8192);
  // gpu-milli without memory takes the same fraction of the card's memory.
  o = sched->Schedule(s, MakePod("q", {{"tessera.io/gpu-milli", "250"}}));
  ASSERT_TRUE(o.ok) << o.reason;
  EXPECT_EQ(o.placement.devices[0].memory_mib, 10240);
}

TEST(Scheduler, UnrenamedTimeSliceCardsServePlainGpuRequestsAsReplicas) {
  ClusterState s;
  NodeSpec n = MakeNode("ts", 1, "T4", SharingMode::kTimeSlice, 15360);
  MustAdd(s, n);
  auto sched = MustScheduler();
  for (int i = 0; i < 4; ++i) {
    PlaceOutcome o = sched->Schedule(s, MakePod("p", {{"nvidia.com/gpu", "1"}}));
    ASSERT_TRUE(o.ok) << o.reason;
    EXPECT_EQ(o.placement.devices[0].kind, DeviceKind::kReplica);
  }
  PlaceOutcome o = sched->Schedule(s, MakePod("p", {{"nvidia.com/gpu", "1"}}));
  EXPECT_FALSE(o.ok);
  EXPECT_EQ(o.reason, "0/1 nodes are available: 1 insufficient free GPUs.");
}

TEST(Scheduler, FailRequestsGreaterThanOne) {
  ClusterState s;
  NodeSpec n = MakeNode("ts", 2, "T4", SharingMode::kTimeSlice, 15360);
  for (auto& g : n.gpus) {
    g.sharing.rename = true;
    g.sharing.fail_requests_greater_than_one = true;
  }
  MustAdd(s, n);
  auto sched = MustScheduler();
  PlaceOutcome o = sched->Schedule(s, MakePod("p", {{"nvidia.com/gpu.shared", "2"}}));
  EXPECT_FALSE(o.ok);
  EXPECT_NE(o.reason.find("time-slicing allows one replica per request"), std::string::npos);
  EXPECT_TRUE(sched->Schedule(s, MakePod("p", {{"nvidia.com/gpu.shared", "1"}})).ok);
}

TEST(Scheduler, WholeGpusAreAlwaysDistinctCards) {
  ClusterState s;
  for (int i = 0; i < 4; ++i) MustAdd(s, MakeNode("n" + std::to_string(i), 8));
  for (const std::string& policy : PolicyNames()) {
    ClusterState st = s;
    auto sched = MustScheduler(policy, 7);
    const int sizes[] = {1, 2, 3, 4, 8, 1, 2};
    for (int round = 0; round < 20; ++round) {
      int k = sizes[round % 7];
      PlaceOutcome o = sched->Schedule(st, MakePod("p", {{"nvidia.com/gpu", std::to_string(k)}}));
      if (!o.ok) continue;
      std::set<int> cards;
      for (const auto& d : o.placement.devices) cards.insert(d.gpu);
      EXPECT_EQ(cards.size(), static_cast<size_t>(k)) << policy;
    }
    // No card is ever held twice.
    for (uint32_t n = 0; n < st.size(); ++n) {
      for (const GpuUsage& u : st.usage(NodeId(n)).gpus) EXPECT_LE(u.holders, 1) << policy;
    }
  }
}

TEST(Scheduler, MultiCardSharesLandOnDistinctCards) {
  ClusterState s;
  MustAdd(s, MakeNode("n", 4, "A10", SharingMode::kShared, 24576));
  auto sched = MustScheduler();
  PlaceOutcome o =
      sched->Schedule(s, MakePod("p", {{"nvidia.com/gpu", "2"}, {"nvidia.com/gpumem", "8000"}}));
  ASSERT_TRUE(o.ok) << o.reason;
  ASSERT_EQ(o.placement.devices.size(), 2u);
  EXPECT_NE(o.placement.devices[0].gpu, o.placement.devices[1].gpu);
  EXPECT_EQ(o.placement.devices[0].memory_mib, 8000);
}

TEST(Scheduler, ExplainsLikeKubeScheduler) {
  ClusterState s;
  MustAdd(s, MakeNode("small-1", 1, "T4", SharingMode::kShared, 15360));
  MustAdd(s, MakeNode("small-2", 1, "T4", SharingMode::kShared, 15360));
  NodeSpec tainted = MakeNode("tainted", 1, "A100-80GB", SharingMode::kShared, 81920);
  tainted.taints = {{"gpu", "", TaintEffect::kNoSchedule}};
  MustAdd(s, tainted);
  auto sched = MustScheduler();
  PlaceOutcome o = sched->Place(s, MakePod("big", {{"nvidia.com/gpumem", "20000"}}));
  EXPECT_FALSE(o.ok);
  EXPECT_EQ(o.reason,
            "0/3 nodes are available: 2 insufficient GPU memory, 1 untolerated taint {gpu: }.");
}

TEST(Scheduler, NodesPassedOverStillCountInTheExplanation) {
  // Six nodes, visited from node 0: two full (no free milli-GPU), two whose class fails the
  // node selector, one cordoned, one with a free card. A 1-GPU pod with selector pool=a lands
  // on the free one, sampling from where the scan stopped. Once that card is taken too, the
  // full and mismatched nodes the fast scan passed over unexamined are examined for the
  // explanation, so every node is counted with the reason a full examination gives.
  ClusterState s;
  for (int i = 0; i < 6; ++i) {
    NodeSpec n = MakeNode("n" + std::to_string(i), 1);
    n.labels = {{"pool", i == 2 || i == 4 ? "b" : "a"}};
    n.unschedulable = i == 5;
    MustAdd(s, n);
  }
  auto sched = MustScheduler();
  PodSpec pod = MakePod("p", {{"nvidia.com/gpu", "1"}});
  pod.node_selector = {{"pool", "a"}};
  for (int i : {0, 1}) {
    PlaceOutcome fill = sched->Schedule(s, pod);
    ASSERT_TRUE(fill.ok) << fill.reason;
    EXPECT_EQ(fill.placement.node, NodeId(i));
  }
  PlaceOutcome o = sched->Schedule(s, pod);
  ASSERT_TRUE(o.ok) << o.reason;
  EXPECT_EQ(o.placement.node, NodeId(3));
  o = sched->Place(s, pod);
  EXPECT_FALSE(o.ok);
  EXPECT_EQ(o.reason,
            "0/6 nodes are available: 3 insufficient free GPUs, 2 node selector mismatch, 1 "
            "node(s) were unschedulable.");
  EXPECT_EQ(o.evaluated_nodes, 6);
}

TEST(Scheduler, APodNoNodeCouldEverHoldSaysSo) {
  // kube-scheduler's UnschedulableAndUnresolvable: when every node fails for a reason no
  // ending work can change (a selector, a taint, more GPUs than the node has), the pod can
  // never fit; one node that only lacks free room now is enough to say it may.
  ClusterState s;
  for (int i = 0; i < 3; ++i) {
    NodeSpec n = MakeNode("n" + std::to_string(i), 2);
    n.labels = {{"pool", i == 0 ? "a" : "b"}};
    if (i == 2) n.taints = {{"gpu", "", TaintEffect::kNoSchedule}};
    MustAdd(s, n);
  }
  auto sched = MustScheduler();
  PodSpec wide = MakePod("wide", {{"nvidia.com/gpu", "4"}});
  PlaceOutcome o = sched->Place(s, wide);
  ASSERT_FALSE(o.ok);
  EXPECT_TRUE(o.never_fits) << o.reason;
  PodSpec elsewhere = MakePod("elsewhere", {{"nvidia.com/gpu", "1"}});
  elsewhere.node_selector = {{"pool", "c"}};
  o = sched->Place(s, elsewhere);
  ASSERT_FALSE(o.ok);
  EXPECT_TRUE(o.never_fits) << o.reason;
  // n0 full: a 2-GPU pod with selector pool=a waits for room there; it may fit later.
  PodSpec two = MakePod("two", {{"nvidia.com/gpu", "2"}});
  two.node_selector = {{"pool", "a"}};
  ASSERT_TRUE(sched->Schedule(s, two).ok);
  o = sched->Place(s, two);
  ASSERT_FALSE(o.ok);
  EXPECT_FALSE(o.never_fits) << o.reason;
  // A gang one of whose members could never be placed can never be whole; one whose members
  // only lack room now may be.
  std::vector<PodSpec> gang = {MakePod("w", {{"nvidia.com/gpu", "1"}}), wide};
  GangOutcome g = sched->ScheduleGang(s, gang);
  ASSERT_FALSE(g.ok);
  EXPECT_TRUE(g.never_fits) << g.reason;
  g = sched->ScheduleGang(s, std::vector<PodSpec>{two, two});
  ASSERT_FALSE(g.ok);
  EXPECT_FALSE(g.never_fits) << g.reason;
  // With a minimum the gang can meet without the member that never fits, it is not "never".
  g = sched->ScheduleGang(s, std::vector<PodSpec>{wide, two}, 1);
  ASSERT_FALSE(g.ok);
  EXPECT_FALSE(g.never_fits) << g.reason;
  g = sched->ScheduleGang(s, std::vector<PodSpec>{wide, wide}, 1);
  ASSERT_FALSE(g.ok);
  EXPECT_TRUE(g.never_fits) << g.reason;
}

TEST(Scheduler, NodesWithoutRoomForTheRequestArePassedOverAndStillExplained) {
  // Three nodes of two shared cards, each card 600 milli taken: 400 free per card, two unheld
  // cards nowhere. A 500-milli share and a 1-GPU pod find no room on any node (their usage
  // summaries say so before the device step), and the explanation counts every node with the
  // reason a full examination gives; a 400-milli share still lands.
  ClusterState s;
  for (int i = 0; i < 3; ++i) {
    MustAdd(s, MakeNode("n" + std::to_string(i), 2, "A100-80GB", SharingMode::kShared));
  }
  auto sched = MustScheduler();
  for (int k = 0; k < 6; ++k) {
    ASSERT_TRUE(sched->Schedule(s, MakePod("f", {{"tessera.io/gpu-milli", "600"}})).ok);
  }
  PlaceOutcome o = sched->Place(s, MakePod("big", {{"tessera.io/gpu-milli", "500"}}));
  EXPECT_FALSE(o.ok);
  EXPECT_EQ(o.reason, "0/3 nodes are available: 3 insufficient GPU memory.");
  o = sched->Place(s, MakePod("whole", {{"nvidia.com/gpu", "1"}}));
  EXPECT_FALSE(o.ok);
  EXPECT_EQ(o.reason, "0/3 nodes are available: 3 insufficient free GPUs.");
  o = sched->Place(s, MakePod("fits", {{"tessera.io/gpu-milli", "400"}}));
  EXPECT_TRUE(o.ok) << o.reason;
}

TEST(Scheduler, AnyFeasibleLooksOnlyAtTheGivenNodes) {
  ClusterState s;
  const NodeId full = MustAdd(s, MakeNode("full", 1));
  const NodeId free_node = MustAdd(s, MakeNode("free", 1));
  NodeSpec t = MakeNode("tainted", 1);
  t.taints = {{"gpu", "", TaintEffect::kNoSchedule}};
  const NodeId tainted = MustAdd(s, t);
  auto sched = MustScheduler();
  const PodSpec pod = MakePod("p", {{"nvidia.com/gpu", "1"}});
  ASSERT_EQ(sched->Schedule(s, pod).placement.node, full);  // takes "full"'s card (lowest id first)
  std::vector<NodeId> none, some = {full, tainted}, all = {full, tainted, free_node};
  EXPECT_FALSE(sched->AnyFeasible(s, pod, none));
  EXPECT_FALSE(sched->AnyFeasible(s, pod, some));
  EXPECT_TRUE(sched->AnyFeasible(s, pod, all));
  // Nothing was taken by asking.
  EXPECT_TRUE(sched->AnyFeasible(s, pod, all));
  EXPECT_EQ(s.allocated_gpu_milli(), 1000);
}

struct FilterCase {
  const char* name;
  std::function<void(PodSpec&)> edit;
  bool fits;
  const char* reason;  // when it does not fit
};

class FilterTest : public ::testing::TestWithParam<FilterCase> {};

// One node: labels zone=a, gpus=8, tier=gold; taints dedicated=ml:NoSchedule, spot:NoExecute.
TEST_P(FilterTest, Verdict) {
  const FilterCase& c = GetParam();
  ClusterState s;
  NodeSpec n = MakeNode("node", 1);
  n.labels = {{"zone", "a"}, {"gpus", "8"}, {"tier", "gold"}};
  n.taints = {{"dedicated", "ml", TaintEffect::kNoSchedule}, {"spot", "", TaintEffect::kNoExecute}};
  MustAdd(s, n);
  PodSpec pod = MakePod("p", {{"nvidia.com/gpu", "1"}});
  pod.tolerations = {{"dedicated", TolerationOp::kEqual, "ml", true, TaintEffect::kNoSchedule},
                     {"spot", TolerationOp::kExists, "", false, TaintEffect::kNoExecute}};
  c.edit(pod);
  auto sched = MustScheduler();
  PlaceOutcome o = sched->Place(s, pod);
  EXPECT_EQ(o.ok, c.fits) << o.reason;
  if (!c.fits) {
    EXPECT_NE(o.reason.find(c.reason), std::string::npos) << o.reason;
  }
}

LabelRequirement Req(std::string key, SelectorOp op, std::vector<std::string> values = {}) {
  return {std::move(key), op, std::move(values)};
}

INSTANTIATE_TEST_SUITE_P(
    Filters, FilterTest,
    ::testing::Values(
        FilterCase{"tolerated", [](PodSpec&) {}, true, ""},
        FilterCase{"selector-match",
                   [](PodSpec& p) {
                     p.node_selector = {{"zone", "a"}};
                   },
                   true, ""},
        FilterCase{"selector-miss",
                   [](PodSpec& p) {
                     p.node_selector = {{"zone", "b"}};
                   },
                   false, "node selector mismatch"},
        FilterCase{"in",
                   [](PodSpec& p) {
                     p.required_terms = {{{Req("zone", SelectorOp::kIn, {"b", "a"})}}};
                   },
                   true, ""},
        FilterCase{"in-miss",
                   [](PodSpec& p) { p.required_terms = {{{Req("zone", SelectorOp::kIn, {"b"})}}}; },
                   false, "node affinity mismatch"},
        FilterCase{
            "notin",
            [](PodSpec& p) { p.required_terms = {{{Req("zone", SelectorOp::kNotIn, {"a"})}}}; },
            false, "node affinity mismatch"},
        FilterCase{"exists",
                   [](PodSpec& p) { p.required_terms = {{{Req("tier", SelectorOp::kExists)}}}; },
                   true, ""},
        FilterCase{
            "doesnotexist",
            [](PodSpec& p) { p.required_terms = {{{Req("tier", SelectorOp::kDoesNotExist)}}}; },
            false, "node affinity mismatch"},
        FilterCase{"gt",
                   [](PodSpec& p) { p.required_terms = {{{Req("gpus", SelectorOp::kGt, {"4"})}}}; },
                   true, ""},
        FilterCase{"gt-miss",
                   [](PodSpec& p) { p.required_terms = {{{Req("gpus", SelectorOp::kGt, {"8"})}}}; },
                   false, "node affinity mismatch"},
        FilterCase{"lt",
                   [](PodSpec& p) { p.required_terms = {{{Req("gpus", SelectorOp::kLt, {"9"})}}}; },
                   true, ""},
        FilterCase{"terms-are-ored",
                   [](PodSpec& p) {
                     p.required_terms = {{{Req("zone", SelectorOp::kIn, {"b"})}},
                                         {{Req("tier", SelectorOp::kIn, {"gold"})}}};
                   },
                   true, ""},
        FilterCase{"requirements-are-anded",
                   [](PodSpec& p) {
                     p.required_terms = {{{Req("zone", SelectorOp::kIn, {"a"}),
                                           Req("tier", SelectorOp::kIn, {"silver"})}}};
                   },
                   false, "node affinity mismatch"},
        FilterCase{"wrong-value", [](PodSpec& p) { p.tolerations[0].value = "web"; }, false,
                   "untolerated taint {dedicated: ml}"},
        FilterCase{"exists-any-value",
                   [](PodSpec& p) {
                     p.tolerations[0] = {"dedicated", TolerationOp::kExists, "", true,
                                         TaintEffect::kNoSchedule};
                   },
                   true, ""},
        FilterCase{"wrong-effect",
                   [](PodSpec& p) {
                     p.tolerations[0].any_effect = false,
                     p.tolerations[0].effect = TaintEffect::kNoExecute;
                   },
                   false, "untolerated taint {dedicated: ml}"},
        FilterCase{"noexecute-untolerated", [](PodSpec& p) { p.tolerations.pop_back(); }, false,
                   "untolerated taint {spot: }"},
        FilterCase{
            "tolerate-everything",
            [](PodSpec& p) {
              p.tolerations = {{"", TolerationOp::kExists, "", true, TaintEffect::kNoSchedule}};
            },
            true, ""},
        FilterCase{"cpu", [](PodSpec& p) { p.requests.cpu_milli = 65000; }, false,
                   "insufficient cpu"},
        FilterCase{"memory", [](PodSpec& p) { p.requests.memory_mib = 600 * 1024; }, false,
                   "insufficient memory"},
        FilterCase{"model-ok",
                   [](PodSpec& p) {
                     p.gpu_models = {"A100-80GB", "H100-80GB"};
                   },
                   true, ""},
        FilterCase{"model-miss",
                   [](PodSpec& p) {
                     p.gpu_models = {"V100M16", "V100M32"};
                   },
                   false, "no GPU of model V100M16|V100M32"}),
    [](const ::testing::TestParamInfo<FilterCase>& i) {
      std::string n = i.param.name;
      for (char& ch : n)
        if (ch == '-') ch = '_';
      return n;
    });

TEST(Scheduler, PreferNoScheduleSteersButDoesNotBlock) {
  ClusterState s;
  NodeSpec a = MakeNode("a-tainted", 1);
  a.taints = {{"busy", "", TaintEffect::kPreferNoSchedule}};
  MustAdd(s, a);
  MustAdd(s, MakeNode("b-clean", 1));
  auto sched = MustScheduler();
  PlaceOutcome o = sched->Schedule(s, MakePod("p", {{"nvidia.com/gpu", "1"}}));
  ASSERT_TRUE(o.ok);
  EXPECT_EQ(s.node(o.placement.node).name, "b-clean");
  o = sched->Schedule(s, MakePod("p", {{"nvidia.com/gpu", "1"}}));
  ASSERT_TRUE(o.ok) << o.reason;
  EXPECT_EQ(s.node(o.placement.node).name, "a-tainted");
}

TEST(Scheduler, DotProductMergesANodesCards) {
  // As the FGD paper's experiments run it. A share of 150 meets a node's free GPU capacity as a
  // whole: a (2 cards, 800 held) has 1,200 free, b (1 card) 1,000, so b is the less aligned node,
  // though a's used card alone has only 200 free.
  ClusterState s;
  NodeId a = MustAdd(s, MakeNode("a", 2, "A100-40GB", SharingMode::kShared, 40960));
  NodeId b = MustAdd(s, MakeNode("b", 1, "A100-40GB", SharingMode::kShared, 40960));
  Placement held;
  held.node = a;
  held.devices = {{0, DeviceKind::kShare, 800, 0, 0, 0}};
  ASSERT_TRUE(s.Allocate(held).ok());
  auto sched = MustScheduler("dotproduct");
  const PodSpec p = MakePod("p", {{"tessera.io/gpu-milli", "150"}, {"cpu", "1"}});
  PlaceOutcome o = sched->Place(s, p);
  ASSERT_TRUE(o.ok) << o.reason;
  EXPECT_EQ(o.placement.node, b);
  // On a alone, both of its cards score the same; the tighter card, 0, is taken.
  ASSERT_TRUE(s.SetUnschedulable(b, true).ok());
  o = sched->Place(s, p);
  ASSERT_TRUE(o.ok) << o.reason;
  EXPECT_EQ(o.placement.node, a);
  EXPECT_EQ(o.placement.devices[0].gpu, 0);
}

TEST(Scheduler, DotProductTiesNodesWithinOneStep) {
  // A share of 850 without CPU. c (8 cards, 150 held on card 7) has 7,850 free, d (100 held on
  // cards 6 and 7) 7,800: 1 - dot / 2 is 0.94787 on c and 0.94820 on d, both step 94. Tied, the
  // tighter card wins: c's card 7 (850 free, d's best has 900), though d is less aligned.
  ClusterState s;
  NodeId c = MustAdd(s, MakeNode("c", 8, "A100-40GB", SharingMode::kShared, 40960));
  NodeId d = MustAdd(s, MakeNode("d", 8, "A100-40GB", SharingMode::kShared, 40960));
  for (const Placement& held : {Placement{c, {}, {{7, DeviceKind::kShare, 150, 0, 0, 0}}},
                                Placement{d,
                                          {},
                                          {{7, DeviceKind::kShare, 100, 0, 0, 0},
                                           {6, DeviceKind::kShare, 100, 0, 0, 0}}}}) {
    ASSERT_TRUE(s.Allocate(held).ok());
  }
  PlaceOutcome o =
      MustScheduler("dotproduct")->Place(s, MakePod("p", {{"tessera.io/gpu-milli", "850"}}));
  ASSERT_TRUE(o.ok) << o.reason;
  EXPECT_EQ(o.placement.node, c);
  EXPECT_EQ(o.placement.devices[0].gpu, 7);
}

TEST(Scheduler, PreferredAffinityPicksThePreferredNode) {
  ClusterState s;
  MustAdd(s, MakeNode("a", 1));
  NodeSpec b = MakeNode("b", 1);
  b.labels = {{"disk", "nvme"}};
  MustAdd(s, b);
  auto sched = MustScheduler();
  PodSpec p = MakePod("p", {{"nvidia.com/gpu", "1"}});
  p.preferred_terms = {{50, {{Req("disk", SelectorOp::kIn, {"nvme"})}}}};
  PlaceOutcome o = sched->Place(s, p);
  ASSERT_TRUE(o.ok);
  EXPECT_EQ(s.node(o.placement.node).name, "b");
}

TEST(Scheduler, CordonedNodesAndUnhealthyGpusAreSkipped) {
  ClusterState s;
  NodeId a = MustAdd(s, MakeNode("a", 2));
  NodeId b = MustAdd(s, MakeNode("b", 2));
  ASSERT_TRUE(s.SetUnschedulable(a, true).ok());
  ASSERT_TRUE(s.SetGpuHealth(b, 0, GpuHealth::kUnhealthy).ok());
  auto sched = MustScheduler();
  PlaceOutcome o = sched->Schedule(s, MakePod("p", {{"nvidia.com/gpu", "1"}}));
  ASSERT_TRUE(o.ok);
  EXPECT_EQ(o.placement.node, b);
  EXPECT_EQ(GpuIndices(s, o.placement), std::vector<int>{1});
  o = sched->Place(s, MakePod("p", {{"nvidia.com/gpu", "1"}}));
  EXPECT_EQ(o.reason,
            "0/2 nodes are available: 1 insufficient free GPUs, 1 node(s) were unschedulable.");
}

TEST(Scheduler, MultiGpuPodStaysInsideOneNvlinkDomain) {
  ClusterState s;
  NodeSpec n = MakeNode("n", 8);
  for (int g = 0; g < 8; ++g) {
    n.gpus[g].nvlink_domain = static_cast<int16_t>(g / 4);
    n.gpus[g].numa_node = static_cast<int16_t>(g / 4);
  }
  NodeId id = MustAdd(s, n);
  // Take GPUs 0-2 so the lowest free indices (3, 4) would straddle the two domains.
  Placement hold;
  hold.node = id;
  for (uint8_t g = 0; g < 3; ++g)
    hold.devices.push_back({g, DeviceKind::kWhole, 1000, 81920, 0, 0});
  ASSERT_TRUE(s.Allocate(hold).ok());
  auto sched = MustScheduler();
  PlaceOutcome o = sched->Schedule(s, MakePod("p", {{"nvidia.com/gpu", "2"}}));
  ASSERT_TRUE(o.ok);
  EXPECT_EQ(GpuIndices(s, o.placement), (std::vector<int>{4, 5}));
  // One card goes where it leaves the domain tightest: GPU 3, completing domain 0.
  o = sched->Schedule(s, MakePod("p", {{"nvidia.com/gpu", "1"}}));
  ASSERT_TRUE(o.ok);
  EXPECT_EQ(GpuIndices(s, o.placement), (std::vector<int>{3}));
}

TEST(Scheduler, MultiGpuPodStaysInsideOneNumaNodeOfItsNvlinkDomain) {
  // One NVLink domain over all eight cards, NUMA node 0 for cards 0-3 and 1 for 4-7.
  struct Case {
    std::vector<uint8_t> busy;
    std::vector<std::vector<int>> allowed;  // acceptable picks
  };
  const Case cases[] = {
      // The lowest free indices (3, 4) straddle the NUMA nodes; 4 and 5 do not.
      {{0, 1, 2}, {{4, 5}}},
      // Busy cards in between: free 1, 3 (NUMA 0) and 4, 6, 7 (NUMA 1).
      {{0, 2, 5}, {{1, 3}, {4, 6}, {4, 7}, {6, 7}}},
  };
  for (const Case& c : cases) {
    ClusterState s;
    NodeSpec n = MakeNode("n", 8);
    for (int g = 0; g < 8; ++g) {
      n.gpus[g].nvlink_domain = 0;
      n.gpus[g].numa_node = static_cast<int16_t>(g / 4);
    }
    NodeId id = MustAdd(s, n);
    Placement hold;
    hold.node = id;
    for (uint8_t g : c.busy) hold.devices.push_back({g, DeviceKind::kWhole, 1000, 81920, 0, 0});
    ASSERT_TRUE(s.Allocate(hold).ok());
    auto sched = MustScheduler();
    PlaceOutcome o = sched->Schedule(s, MakePod("p", {{"nvidia.com/gpu", "2"}}));
    ASSERT_TRUE(o.ok);
    const std::vector<int> got = GpuIndices(s, o.placement);
    EXPECT_NE(std::find(c.allowed.begin(), c.allowed.end(), got), c.allowed.end())
        << got[0] << "," << got[1];
  }
}

TEST(Gang, AllOrNothing) {
  ClusterState s;
  for (int i = 0; i < 3; ++i) MustAdd(s, MakeNode("n" + std::to_string(i), 8));
  auto sched = MustScheduler();
  std::vector<PodSpec> four(4, MakePod("w", {{"nvidia.com/gpu", "8"}}));
  const ClusterState before = s;
  GangOutcome g = sched->ScheduleGang(s, four);
  EXPECT_FALSE(g.ok);
  EXPECT_NE(g.reason.find("could place 3"), std::string::npos) << g.reason;
  EXPECT_EQ(s.allocated_gpu_milli(), 0);
  for (uint32_t n = 0; n < s.size(); ++n) {
    EXPECT_EQ(s.usage(NodeId(n)).pods, 0);
    EXPECT_EQ(s.usage(NodeId(n)).used, before.usage(NodeId(n)).used);
  }
  for (const auto& p : g.placements) EXPECT_FALSE(p.has_value());

  std::vector<PodSpec> three(3, MakePod("w", {{"nvidia.com/gpu", "8"}}));
  g = sched->ScheduleGang(s, three);
  ASSERT_TRUE(g.ok) << g.reason;
  std::set<uint32_t> nodes;
  for (const auto& p : g.placements) nodes.insert(p->node.value());
  EXPECT_EQ(nodes.size(), 3u);
  EXPECT_EQ(s.allocated_gpu_milli(), 24000);
}

TEST(Gang, MinMemberAllowsAPartialGang) {
  ClusterState s;
  MustAdd(s, MakeNode("n", 8));
  auto sched = MustScheduler();
  std::vector<PodSpec> members(3, MakePod("w", {{"nvidia.com/gpu", "4"}}));
  GangOutcome g = sched->ScheduleGang(s, members, 2);
  ASSERT_TRUE(g.ok) << g.reason;
  int placed = 0;
  for (const auto& p : g.placements) placed += p.has_value();
  EXPECT_EQ(placed, 2);
  EXPECT_EQ(s.allocated_gpu_milli(), 8000);
}

TEST(Gang, RequiredMembersArePlacedFirstAndMustBePlaced) {
  // A parameter server (1 GPU, required: its task's minimum) and two 4-GPU workers, two of
  // three members needed, on one 8-GPU node. Largest first alone would place the two workers
  // and leave the server out; the server goes first and one worker joins it.
  ClusterState s;
  MustAdd(s, MakeNode("n", 8));
  auto sched = MustScheduler();
  std::vector<PodSpec> members = {MakePod("ps", {{"nvidia.com/gpu", "1"}}),
                                  MakePod("w0", {{"nvidia.com/gpu", "4"}}),
                                  MakePod("w1", {{"nvidia.com/gpu", "4"}})};
  const std::vector<uint8_t> required = {1, 0, 0};
  GangOutcome g = sched->ScheduleGang(s, members, 2, required);
  ASSERT_TRUE(g.ok) << g.reason;
  EXPECT_TRUE(g.placements[0].has_value());
  EXPECT_EQ(s.allocated_gpu_milli(), 5000);
  // A required member that cannot be placed fails the gang, whatever else fits; nothing stays.
  ClusterState t;
  MustAdd(t, MakeNode("n", 8));
  members[0] = MakePod("ps", {{"nvidia.com/gpu", "16"}});
  g = sched->ScheduleGang(t, members, 2, required);
  EXPECT_FALSE(g.ok);
  EXPECT_NE(g.reason.find("minimum of each of its tasks"), std::string::npos) << g.reason;
  EXPECT_EQ(t.allocated_gpu_milli(), 0);
}

TEST(Gang, PacksMembersOntoFewNodes) {
  ClusterState s;
  for (int i = 0; i < 4; ++i) MustAdd(s, MakeNode("n" + std::to_string(i), 8));
  auto sched = MustScheduler("spread");  // spread alone would use four nodes
  std::vector<PodSpec> members(4, MakePod("w", {{"nvidia.com/gpu", "2"}}));
  GangOutcome g = sched->ScheduleGang(s, members);
  ASSERT_TRUE(g.ok);
  std::set<uint32_t> nodes;
  for (const auto& p : g.placements) nodes.insert(p->node.value());
  EXPECT_EQ(nodes.size(), 1u);
}

std::vector<Placement> RunSequence(const std::string& policy, uint64_t seed) {
  ClusterState s;
  for (int i = 0; i < 6; ++i) {
    MustAdd(s, MakeNode("n" + std::to_string(i), 4, "A10", SharingMode::kShared, 24576));
  }
  auto sched = MustScheduler(policy, seed);
  std::vector<Placement> out;
  const char* shapes[] = {"300", "500", "1000", "250", "700"};
  for (int i = 0; i < 30; ++i) {
    api::ResourceList r;
    if (i % 7 == 3) {
      r = {{"nvidia.com/gpu", "2"}};
    } else {
      r = {{"tessera.io/gpu-milli", shapes[i % 5]}};
    }
    PlaceOutcome o = sched->Schedule(s, MakePod("p", r));
    if (o.ok) out.push_back(o.placement);
  }
  return out;
}

TEST(Scheduler, DeterministicForSameInputAndSeed) {
  for (const std::string& policy : PolicyNames()) {
    EXPECT_EQ(RunSequence(policy, 42), RunSequence(policy, 42)) << policy;
  }
  EXPECT_NE(RunSequence("random", 1), RunSequence("random", 2));
}

TEST(Scheduler, SamplesNodesOnLargeClustersLikeKubeScheduler) {
  ClusterState s;
  for (int i = 0; i < 1000; ++i) MustAdd(s, MakeNode("n" + std::to_string(i), 1));
  auto adaptive = MustScheduler("bestfit", 1, 0);
  PlaceOutcome o = adaptive->Place(s, MakePod("p", {{"nvidia.com/gpu", "1"}}));
  ASSERT_TRUE(o.ok);
  EXPECT_EQ(o.feasible_nodes, 420);  // 50% - 1000/125 = 42%
  auto all = MustScheduler("bestfit", 1, 100);
  o = all->Place(s, MakePod("p", {{"nvidia.com/gpu", "1"}}));
  EXPECT_EQ(o.feasible_nodes, 1000);
}

TEST(Scheduler, UnknownPolicyIsAnError) {
  SchedulerConfig c;
  c.policy = "fastest";
  auto s = Scheduler::Create(c);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.status().message().find("known: bestfit"), std::string::npos);
}

}  // namespace
}  // namespace tessera::core
