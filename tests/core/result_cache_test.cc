#include "core/result_cache.h"

#include <gtest/gtest.h>

#include <random>
#include <set>

#include "core/mig.h"
#include "core/same_placements.h"
#include "core/scheduler.h"
#include "core/test_cluster.h"

namespace tessera::core {
namespace {

using testing::MakeGpu;
using testing::MakeNode;
using testing::MustAdd;

Placement ShareOn(NodeId node, int gpu, int milli) {
  Placement p;
  p.node = node;
  p.resources = {1000, 1024};
  DeviceAssignment d;
  d.gpu = static_cast<uint8_t>(gpu);
  d.kind = DeviceKind::kShare;
  d.milli = milli;
  d.memory_mib = 1024;
  p.devices.push_back(d);
  return p;
}

Candidate On(NodeId node) {
  Candidate c;
  c.node = node;
  return c;
}

TEST(NodeVersion, ChangesWithEveryChangeToTheNodeAndOnlyThatNode) {
  ClusterState s;
  const NodeId a = MustAdd(s, MakeNode("a", 2, "A100-40GB", SharingMode::kShared, 40960));
  const NodeId b = MustAdd(s, MakeNode("b", 2, "A100-40GB", SharingMode::kShared, 40960));
  std::set<uint64_t> seen = {s.usage(a).version, s.usage(b).version};
  EXPECT_EQ(seen.size(), 2u);
  EXPECT_EQ(seen.count(0), 0u);
  auto changed = [&](const char* what) {
    const uint64_t v = s.usage(a).version;
    EXPECT_TRUE(seen.insert(v).second) << what << " left the version at one seen before";
  };
  const uint64_t b_version = s.usage(b).version;
  const Placement p = ShareOn(a, 0, 300);
  ASSERT_TRUE(s.Allocate(p).ok());
  changed("Allocate");
  ASSERT_TRUE(s.Release(p).ok());
  changed("Release (back to the state before the allocation, but a new version)");
  ASSERT_TRUE(s.SetUnschedulable(a, true).ok());
  changed("SetUnschedulable");
  ASSERT_TRUE(s.SetGpuHealth(a, 1, GpuHealth::kUnhealthy).ok());
  changed("SetGpuHealth");
  ASSERT_TRUE(s.SetLabels(a, {{"pool", "x"}}).ok());
  changed("SetLabels");
  ASSERT_TRUE(s.SetTaints(a, {{"k", "v", TaintEffect::kNoSchedule}}).ok());
  changed("SetTaints");
  EXPECT_EQ(s.usage(b).version, b_version);
  // A refused change changes nothing.
  const uint64_t v = s.usage(a).version;
  EXPECT_FALSE(s.Allocate(ShareOn(a, 0, 2000)).ok());
  EXPECT_EQ(s.usage(a).version, v);
}

TEST(NodeVersion, CopiesShareVersionsUntilOneChanges) {
  ClusterState s;
  const NodeId a = MustAdd(s, MakeNode("a", 2, "A100-40GB", SharingMode::kShared, 40960));
  ClusterState x = s;
  ClusterState y = s;
  EXPECT_EQ(x.usage(a).version, y.usage(a).version);
  // The same change made to two copies gives two versions: a version names one state of one
  // copy's history, never a state reached another way.
  ASSERT_TRUE(x.Allocate(ShareOn(a, 0, 300)).ok());
  ASSERT_TRUE(y.Allocate(ShareOn(a, 1, 300)).ok());
  EXPECT_NE(x.usage(a).version, y.usage(a).version);
  EXPECT_NE(x.usage(a).version, s.usage(a).version);
}

TEST(ShapeVersion, ChangesWithTheNodeSetAndRecordsNotWithUsage) {
  ClusterState s;
  const NodeId a = MustAdd(s, MakeNode("a", 2));
  uint64_t shape = s.shape_version();
  Placement whole;
  whole.node = a;
  whole.devices.push_back({0, DeviceKind::kWhole, 1000, 81920});
  ASSERT_TRUE(s.Allocate(whole).ok());
  EXPECT_EQ(s.shape_version(), shape);
  MustAdd(s, MakeNode("b", 8));
  EXPECT_NE(s.shape_version(), shape);
  shape = s.shape_version();
  ASSERT_TRUE(s.SetTaints(a, {{"k", "v", TaintEffect::kPreferNoSchedule}}).ok());
  EXPECT_NE(s.shape_version(), shape);
}

TEST(PlacementSignature, CoversEveryFieldButTheName) {
  PodSpec base;
  base.name = "a";
  base.requests = {1000, 2048};
  base.gpu = {GpuRequestKind::kShare, 1, 500, 0, ""};
  const std::string sig = PlacementSignature(base);
  PodSpec renamed = base;
  renamed.name = "b";
  EXPECT_EQ(PlacementSignature(renamed), sig);
  std::vector<std::pair<const char*, std::function<void(PodSpec&)>>> changes = {
      {"cpu", [](PodSpec& p) { p.requests.cpu_milli = 1001; }},
      {"memory", [](PodSpec& p) { p.requests.memory_mib = 1; }},
      {"gpu kind", [](PodSpec& p) { p.gpu.kind = GpuRequestKind::kWhole; }},
      {"gpu count", [](PodSpec& p) { p.gpu.count = 2; }},
      {"gpu milli", [](PodSpec& p) { p.gpu.milli = 501; }},
      {"gpu memory", [](PodSpec& p) { p.gpu.memory_mib = 1; }},
      {"mig profile", [](PodSpec& p) { p.gpu.mig_profile = "1g.5gb"; }},
      {"models", [](PodSpec& p) { p.gpu_models = {"A100-40GB"}; }},
      {"selector",
       [](PodSpec& p) {
         p.node_selector = {{"pool", "a"}};
       }},
      {"required",
       [](PodSpec& p) {
         p.required_terms = {{{{"pool", SelectorOp::kExists, {}}}}};
       }},
      {"preferred",
       [](PodSpec& p) {
         p.preferred_terms = {{5, {{{"pool", SelectorOp::kExists, {}}}}}};
       }},
      {"toleration",
       [](PodSpec& p) {
         p.tolerations = {{"k", TolerationOp::kExists, ""}};
       }},
  };
  std::set<std::string> all = {sig};
  for (const auto& [what, change] : changes) {
    PodSpec p = base;
    change(p);
    EXPECT_TRUE(all.insert(PlacementSignature(p)).second) << what;
  }
  // Field boundaries are encoded: moving a character between two strings changes the signature.
  PodSpec x = base;
  PodSpec y = base;
  x.node_selector = {{"ab", "c"}};
  y.node_selector = {{"a", "bc"}};
  EXPECT_NE(PlacementSignature(x), PlacementSignature(y));
}

TEST(NodeResultCache, KeepsResultsPerSignatureAndNodeVersion) {
  ClusterState s;
  const NodeId a = MustAdd(s, MakeNode("a", 2));
  const NodeId b = MustAdd(s, MakeNode("b", 2));
  NodeResultCache cache(2, 2, 1 << 17);
  const std::vector<uint64_t> gens = {0, 0};
  Candidate c;
  c.node = a;
  c.n = 1;
  c.picks[0].gpu = 1;
  cache.Begin("one", s, gens);
  EXPECT_EQ(cache.Find(a, s.usage(a).version), nullptr);
  cache.Store(s.usage(a).version, c);
  cache.SetScore(a, 0, 7);
  cache.SetScore(a, 1, -3);
  const Candidate* hit = cache.Find(a, s.usage(a).version);
  ASSERT_NE(hit, nullptr);
  EXPECT_EQ(hit->picks[0].gpu, 1);
  EXPECT_EQ(cache.Score(a, 0), 7);
  EXPECT_EQ(cache.Score(a, 1), -3);
  EXPECT_EQ(cache.Find(b, s.usage(b).version), nullptr);
  EXPECT_EQ(cache.Find(a, s.usage(a).version + 1), nullptr);
  // Another signature has its own row.
  cache.Begin("two", s, gens);
  EXPECT_EQ(cache.Find(a, s.usage(a).version), nullptr);
  cache.Store(s.usage(b).version, On(b));
  // A third signature takes the row with the fewest hits: "two" (none), though "one" was used
  // less recently.
  cache.Begin("three", s, gens);
  EXPECT_EQ(cache.rows(), 2u);
  cache.Begin("one", s, gens);
  EXPECT_NE(cache.Find(a, s.usage(a).version), nullptr);
  cache.Begin("two", s, gens);  // evicts "three" (no hits); its row starts empty
  EXPECT_EQ(cache.Find(b, s.usage(b).version), nullptr);
  // A new generation of a plugin drops every row.
  cache.Begin("one", s, std::vector<uint64_t>{0, 1});
  EXPECT_EQ(cache.Find(a, s.usage(a).version), nullptr);
  cache.Store(s.usage(a).version, c);
  // So does a change of the cluster's shape.
  MustAdd(s, MakeNode("c", 2));
  cache.Begin("one", s, std::vector<uint64_t>{0, 1});
  EXPECT_EQ(cache.Find(a, s.usage(a).version), nullptr);
}

TEST(NodeResultCache, KeepsHittingWhenSignaturesCycleOverMoreThanItsRows) {
  // Three signatures in turn over two rows: least-recently-used would never hit.
  ClusterState s;
  const NodeId a = MustAdd(s, MakeNode("a", 1));
  NodeResultCache cache(1, 2, 1 << 17);
  const std::vector<uint64_t> gens = {0};
  int hits = 0;
  for (int round = 0; round < 30; ++round) {
    for (const char* sig : {"x", "y", "z"}) {
      cache.Begin(sig, s, gens);
      if (cache.Find(a, s.usage(a).version) != nullptr) {
        ++hits;
      } else {
        cache.Store(s.usage(a).version, On(a));
      }
    }
  }
  EXPECT_GE(hits, 25);
}

TEST(NodeResultCache, AgesOutRowsThatNoLongerHit) {
  ClusterState s;
  const NodeId a = MustAdd(s, MakeNode("a", 1));
  NodeResultCache cache(1, 2, 1 << 17);
  const std::vector<uint64_t> gens = {0};
  auto touch = [&](const std::string& sig) {
    cache.Begin(sig, s, gens);
    if (cache.Find(a, s.usage(a).version) == nullptr) {
      cache.Store(s.usage(a).version, On(a));
      return false;
    }
    return true;
  };
  for (int i = 0; i < 100; ++i) touch("old");  // 99 hits
  // New signatures, each used twice: once stored, once hit. "old" is halved at every eviction
  // and, once below the newcomers' counts, gives its row up.
  int fresh_hits = 0;
  for (int i = 0; i < 30; ++i) {
    const std::string sig = "new" + std::to_string(i);
    touch(sig);
    fresh_hits += touch(sig);
    fresh_hits += touch(sig);
  }
  EXPECT_GE(fresh_hits, 50);
  EXPECT_FALSE(touch("old"));
}

TEST(NodeResultCache, RowsShrinkOnLargeClusters) {
  ClusterState s;
  for (int i = 0; i < 10; ++i) MustAdd(s, MakeNode("n" + std::to_string(i), 1));
  NodeResultCache cache(1, 64, 30);  // 30 entries: 3 rows of 10 nodes
  const std::vector<uint64_t> gens = {0};
  for (const char* sig : {"a", "b", "c", "d", "e"}) cache.Begin(sig, s, gens);
  EXPECT_EQ(cache.rows(), 3u);
}

// --- Placements with reuse are the placements without it ------------------------------------

// Reuse is checked without state classes, which a scan of every node would otherwise use
// instead (tests/core/state_classes_test.cc checks those).
void ExpectReuseChangesNothing(SchedulerConfig config, uint64_t seed) {
  config.group_identical_nodes = false;
  SchedulerConfig without = config;
  config.reuse_node_results = true;
  without.reuse_node_results = false;
  testing::ExpectSamePlacements(config, without, seed, testing::RandomNode);
}

class ReuseTest : public ::testing::TestWithParam<std::string> {};

TEST_P(ReuseTest, PlacesExactlyAsWithoutReuse) {
  SchedulerConfig c;
  c.policy = GetParam();
  c.seed = 7;
  c.percentage_of_nodes_to_score = 100;
  for (uint64_t seed : {1, 2}) ExpectReuseChangesNothing(c, seed);
}

INSTANTIATE_TEST_SUITE_P(Policies, ReuseTest, ::testing::ValuesIn(PolicyNames()));

TEST(Reuse, PlacesExactlyAsWithoutReuseWithAFixedWorkloadAndPartialScans) {
  // Fixed workloads with and without a pinned model: FGD and fragpack reuse their scores with
  // either (fragpack applies its contention, which reads the whole cluster, to reused scores
  // too).
  const std::vector<TaskType> any_model = {{1000, 1, 500, {}, 5}, {2000, 1, 1000, {}, 3}};
  std::vector<TaskType> pinned = any_model;
  pinned.push_back({1000, 1, 500, {"A100-40GB"}, 2});
  for (const char* policy : {"fgd", "fragpack"}) {
    for (const auto& workload : {any_model, pinned}) {
      SchedulerConfig c;
      c.policy = policy;
      c.fgd_workload = workload;
      c.percentage_of_nodes_to_score = 100;
      ExpectReuseChangesNothing(c, 3);
      c.percentage_of_nodes_to_score = 30;  // stops scanning early, from a rotating start
      ExpectReuseChangesNothing(c, 4);
    }
  }
}

}  // namespace
}  // namespace tessera::core
