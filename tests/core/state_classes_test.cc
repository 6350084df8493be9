#include "core/state_classes.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>
#include <vector>

#include "core/same_placements.h"
#include "core/scheduler.h"
#include "core/test_cluster.h"

namespace tessera::core {
namespace {

using testing::MakeNode;
using testing::MustAdd;

Placement WholeOn(NodeId node, int gpu) {
  Placement p;
  p.node = node;
  p.resources = {1000, 1024};
  DeviceAssignment d;
  d.gpu = static_cast<uint8_t>(gpu);
  d.kind = DeviceKind::kWhole;
  d.milli = 1000;
  d.memory_mib = 81920;
  p.devices.push_back(d);
  return p;
}

NodeSpec Host(const std::string& name, int gpus = 4) {
  NodeSpec n = MakeNode(name, gpus);
  n.labels = {{"pool", "a"}, {std::string(kHostnameLabel), name}};
  return n;
}

// The classes as sets of node ids, each class ordered by its first node.
std::set<std::vector<uint32_t>> Partition(const StateClasses& classes) {
  std::set<std::vector<uint32_t>> out;
  for (const StateClasses::Live& c : classes.live()) {
    out.insert({c.first.value(), static_cast<uint32_t>(c.size)});
  }
  return out;
}

// The partition computed from scratch: nodes grouped by SameNodeState, as (first, size).
std::set<std::vector<uint32_t>> Expected(const ClusterState& s) {
  std::vector<std::vector<uint32_t>> groups;
  for (uint32_t i = 0; i < s.size(); ++i) {
    auto g = std::find_if(groups.begin(), groups.end(), [&](const std::vector<uint32_t>& g) {
      return SameNodeState(s, NodeId(g[0]), NodeId(i));
    });
    if (g == groups.end()) {
      groups.push_back({i});
    } else {
      g->push_back(i);
    }
  }
  std::set<std::vector<uint32_t>> out;
  for (const auto& g : groups) out.insert({g[0], static_cast<uint32_t>(g.size())});
  return out;
}

TEST(StateClasses, NodesDifferingOnlyInNameAndHostnameShareAClass) {
  ClusterState s;
  for (int i = 0; i < 5; ++i) MustAdd(s, Host("n" + std::to_string(i)));
  MustAdd(s, Host("eight", 8));  // more cards
  NodeSpec other = Host("other");
  other.labels["pool"] = "b";  // another pool
  MustAdd(s, other);
  StateClasses classes;
  classes.Sync(s);
  EXPECT_EQ(Partition(classes), (std::set<std::vector<uint32_t>>{{0, 5}, {5, 1}, {6, 1}}));
  EXPECT_EQ(s.class_pool(s.node(NodeId(0)).cls), s.class_pool(s.node(NodeId(4)).cls));
  EXPECT_NE(s.node(NodeId(0)).cls, s.node(NodeId(4)).cls);  // the classes keep the hostname
}

TEST(StateClasses, FollowPlacementsReleasesAndCordons) {
  ClusterState s;
  for (int i = 0; i < 4; ++i) MustAdd(s, Host("n" + std::to_string(i)));
  StateClasses classes;
  classes.Sync(s);
  ASSERT_TRUE(s.Allocate(WholeOn(NodeId(0), 1)).ok());
  classes.Sync(s);
  EXPECT_EQ(Partition(classes), (std::set<std::vector<uint32_t>>{{0, 1}, {1, 3}}));
  ASSERT_TRUE(s.Allocate(WholeOn(NodeId(2), 1)).ok());
  classes.Sync(s);
  EXPECT_EQ(Partition(classes), (std::set<std::vector<uint32_t>>{{0, 2}, {1, 2}}));
  ASSERT_TRUE(s.Allocate(WholeOn(NodeId(3), 0)).ok());  // another card: another state
  classes.Sync(s);
  EXPECT_EQ(Partition(classes), (std::set<std::vector<uint32_t>>{{0, 2}, {1, 1}, {3, 1}}));
  ASSERT_TRUE(s.Release(WholeOn(NodeId(0), 1)).ok());
  classes.Sync(s);
  EXPECT_EQ(Partition(classes), (std::set<std::vector<uint32_t>>{{0, 2}, {2, 1}, {3, 1}}));
  ASSERT_TRUE(s.SetUnschedulable(NodeId(1), true).ok());
  classes.Sync(s);
  EXPECT_EQ(Partition(classes), Expected(s));
  EXPECT_EQ(classes.live().size(), 4u);
}

TEST(StateClasses, AStateCopyThatWentAnotherWayIsReadAfresh) {
  ClusterState base;
  for (int i = 0; i < 6; ++i) MustAdd(base, Host("n" + std::to_string(i)));
  ClusterState left = base;
  ClusterState right = base;
  ASSERT_TRUE(left.Allocate(WholeOn(NodeId(1), 0)).ok());
  ASSERT_TRUE(right.Allocate(WholeOn(NodeId(4), 2)).ok());
  StateClasses classes;
  classes.Sync(left);
  EXPECT_EQ(Partition(classes), Expected(left));
  classes.Sync(right);  // not a descendant of `left`: every node's version is compared
  EXPECT_EQ(Partition(classes), Expected(right));
  EXPECT_EQ(Partition(classes), (std::set<std::vector<uint32_t>>{{0, 5}, {4, 1}}));
}

TEST(StateClasses, StayTheClassesComputedAfreshThroughARandomHistory) {
  std::mt19937_64 rng(5);
  ClusterState s;
  for (int i = 0; i < 30; ++i) MustAdd(s, Host("n" + std::to_string(i), 1 + i % 2));
  StateClasses classes;
  std::vector<Placement> held;
  for (int step = 0; step < 400; ++step) {
    const NodeId node(static_cast<uint32_t>(rng() % s.size()));
    const int op = static_cast<int>(rng() % 10);
    if (op < 5) {
      const Placement p = WholeOn(node, static_cast<int>(rng() % s.node(node).gpus.size()));
      if (s.Allocate(p).ok()) held.push_back(p);
    } else if (op < 8 && !held.empty()) {
      const size_t k = rng() % held.size();
      ASSERT_TRUE(s.Release(held[k]).ok());
      held.erase(held.begin() + static_cast<std::ptrdiff_t>(k));
    } else if (op == 8) {
      ASSERT_TRUE(
          s.SetGpuHealth(node, 0, rng() % 2 ? GpuHealth::kHealthy : GpuHealth::kCordoned).ok());
    }
    // Several changes between syncs now and then: more than the state's change log holds.
    if (rng() % 3 != 0 || step % 50 == 0) {
      classes.Sync(s);
      ASSERT_EQ(Partition(classes), Expected(s)) << "step " << step;
    }
  }
}

TEST(ClusterStateChangeLog, NamesTheNodesChangedSinceAVersionWhileItReachesBack) {
  ClusterState s;
  for (int i = 0; i < 3; ++i) MustAdd(s, MakeNode("n" + std::to_string(i), 2));
  const uint64_t seen = s.last_usage_version();
  std::vector<NodeId> changed;
  EXPECT_TRUE(s.ChangedSince(seen, changed));
  EXPECT_TRUE(changed.empty());
  ASSERT_TRUE(s.Allocate(WholeOn(NodeId(2), 0)).ok());
  ASSERT_TRUE(s.Allocate(WholeOn(NodeId(0), 1)).ok());
  EXPECT_TRUE(s.ChangedSince(seen, changed));
  EXPECT_EQ(changed, (std::vector<NodeId>{NodeId(2), NodeId(0)}));
  // A copy carries the log; a version it never had is not found.
  ClusterState copy = s;
  changed.clear();
  EXPECT_TRUE(copy.ChangedSince(seen, changed));
  EXPECT_EQ(changed.size(), 2u);
  ASSERT_TRUE(s.Allocate(WholeOn(NodeId(1), 0)).ok());
  changed.clear();
  EXPECT_FALSE(copy.ChangedSince(s.last_usage_version(), changed));
  // Past the log's length the reader must look at every node.
  for (int k = 0; k < 40; ++k) {
    ASSERT_TRUE(s.Allocate(WholeOn(NodeId(1), 1)).ok());
    ASSERT_TRUE(s.Release(WholeOn(NodeId(1), 1)).ok());
  }
  changed.clear();
  EXPECT_FALSE(s.ChangedSince(seen, changed));
}

// --- Placements by state class are the placements node by node ------------------------------

// Nodes of four templates (so that many share a state), each with its hostname label, as a
// Kubernetes cluster's nodes have.
NodeSpec TemplateNode(std::mt19937_64& rng, int i) {
  NodeSpec n;
  n.name = "node-" + std::to_string(i);
  const int kind = static_cast<int>(rng() % 4);
  n.allocatable = {32000, 256 * 1024};
  n.labels = {{"pool", kind % 2 ? "a" : "b"}, {std::string(kHostnameLabel), n.name}};
  if (kind == 3) n.taints.push_back({"dedicated", "x", TaintEffect::kNoSchedule});
  const std::string model = kind < 2 ? "A100-40GB" : "H100-80GB";
  const int64_t mem = kind < 2 ? 40960 : 81920;
  for (int g = 0; g < 4; ++g) {
    SharingMode mode = kind == 1   ? SharingMode::kShared
                       : kind == 2 ? (g % 2 ? SharingMode::kShared : SharingMode::kExclusive)
                                   : SharingMode::kExclusive;
    if (kind == 0 && g == 3) mode = SharingMode::kTimeSlice;
    n.gpus.push_back(testing::MakeGpu(g, model, mem, mode, g / 2, 0));
  }
  if (kind == 1) {
    n.gpus[0].sharing.mode = SharingMode::kMig;
    n.gpus[0].sharing.mig = PlaceMigLayout(*FindMigGeometry(model),
                                           std::vector<std::pair<std::string, int>>{{"1g.5gb", 7}})
                                .value();
  }
  return n;
}

class StateClassPlacementTest : public ::testing::TestWithParam<std::string> {};

TEST_P(StateClassPlacementTest, PlacesExactlyAsNodeByNode) {
  SchedulerConfig by_class;
  by_class.policy = GetParam();
  by_class.seed = 7;
  by_class.percentage_of_nodes_to_score = 100;
  SchedulerConfig by_node = by_class;
  by_node.group_identical_nodes = false;
  by_node.reuse_node_results = false;
  for (uint64_t seed : {11, 12}) {
    testing::ExpectSamePlacements(by_class, by_node, seed, TemplateNode, /*name_hosts=*/true);
    testing::ExpectSamePlacements(by_class, by_node, seed, testing::RandomNode);
  }
}

INSTANTIATE_TEST_SUITE_P(Policies, StateClassPlacementTest, ::testing::ValuesIn(PolicyNames()));

TEST(StateClassPlacement, ANodeNoneCanHoldIsReportedPerNodeCount) {
  ClusterState s;
  for (int i = 0; i < 6; ++i) MustAdd(s, Host("n" + std::to_string(i), 2));
  ASSERT_TRUE(s.SetUnschedulable(NodeId(5), true).ok());
  for (bool group : {true, false}) {
    SchedulerConfig c;
    c.percentage_of_nodes_to_score = 100;
    c.group_identical_nodes = group;
    auto sched = Scheduler::Create(c).value();
    PodSpec pod;
    pod.name = "big";
    pod.requests = {1000, 1024};
    pod.gpu = {GpuRequestKind::kWhole, 4, 0, 0, ""};
    const PlaceOutcome o = sched->Place(s, pod);
    EXPECT_FALSE(o.ok);
    EXPECT_EQ(
        o.reason,
        "0/6 nodes are available: 5 node has fewer GPUs than the pod asks: it can never fit, 1 "
        "node(s) were unschedulable.")
        << "grouped: " << group;
    EXPECT_TRUE(o.never_fits) << "grouped: " << group;
    pod.gpu.count = 1;
    const PlaceOutcome fits = sched->Place(s, pod);
    EXPECT_TRUE(fits.ok);
    EXPECT_EQ(fits.placement.node, NodeId(0));
    EXPECT_EQ(fits.feasible_nodes, 5);
    EXPECT_EQ(fits.evaluated_nodes, 6);
  }
}

}  // namespace
}  // namespace tessera::core
