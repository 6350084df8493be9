#include "core/cluster_state.h"

#include <gtest/gtest.h>

#include "core/scheduler.h"
#include "core/test_cluster.h"

namespace tessera::core {
namespace {

using testing::MakeGpu;
using testing::MakeNode;
using testing::MakePod;
using testing::MustAdd;
using testing::MustScheduler;

TEST(ClusterState, RejectsBadNodes) {
  ClusterState s;
  MustAdd(s, MakeNode("a", 1));
  EXPECT_EQ(s.AddNode(MakeNode("a", 1)).status().code(), StatusCode::kAlreadyExists);

  NodeSpec t4 = MakeNode("t4", 1, "T4", SharingMode::kMig, 15360);
  t4.gpus[0].sharing.mig = {{0, 0}};
  auto r = s.AddNode(t4);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("does not support MIG"), std::string::npos);

  NodeSpec ts = MakeNode("ts", 1, "T4", SharingMode::kTimeSlice, 15360);
  ts.gpus[0].sharing.replicas = 1;
  EXPECT_FALSE(s.AddNode(ts).ok());

  NodeSpec dup = MakeNode("dup", 2);
  dup.gpus[1].index = 0;
  EXPECT_NE(s.AddNode(dup).status().message().find("duplicate GPU index"), std::string::npos);
  EXPECT_EQ(s.size(), 1u);
}

TEST(ClusterState, NodesWithEqualLabelsShareAClass) {
  ClusterState s;
  NodeSpec a = MakeNode("a", 1);
  a.labels = {{"pool", "x"}};
  NodeSpec b = MakeNode("b", 1);
  b.labels = {{"pool", "x"}};
  NodeSpec c = MakeNode("c", 1);
  c.labels = {{"pool", "y"}};
  NodeId ia = MustAdd(s, a), ib = MustAdd(s, b), ic = MustAdd(s, c);
  EXPECT_EQ(s.node(ia).cls, s.node(ib).cls);
  EXPECT_NE(s.node(ia).cls, s.node(ic).cls);
  EXPECT_EQ(s.labels(ic).at("pool"), "y");
  EXPECT_EQ(s.ExportSpec(ia).labels.at("pool"), "x");
}

TEST(ClusterState, AllocateIsAtomicAndReleaseRestores) {
  ClusterState s;
  NodeSpec n = MakeNode("n", 2, "A100-40GB", SharingMode::kShared, 40960);
  NodeId id = MustAdd(s, n);
  Placement share;
  share.node = id;
  share.resources = {1000, 1024};
  share.devices = {{0, DeviceKind::kShare, 300, 12288, 0, 0}};
  ASSERT_TRUE(s.Allocate(share).ok());
  EXPECT_EQ(s.allocated_gpu_milli(), 300);

  // Second device overflows: nothing of the placement may stick.
  Placement bad;
  bad.node = id;
  bad.resources = {1000, 0};
  bad.devices = {{1, DeviceKind::kShare, 500, 1000, 0, 0},
                 {0, DeviceKind::kShare, 800, 1000, 0, 0}};
  EXPECT_FALSE(s.Allocate(bad).ok());
  EXPECT_EQ(s.usage(id).gpus[1].milli, 0);
  EXPECT_EQ(s.usage(id).used.cpu_milli, 1000);

  // A whole card cannot be taken while a share sits on it.
  Placement whole;
  whole.node = id;
  whole.devices = {{0, DeviceKind::kWhole, 1000, 40960, 0, 0}};
  EXPECT_FALSE(s.Allocate(whole).ok());

  ASSERT_TRUE(s.Release(share).ok());
  EXPECT_EQ(s.allocated_gpu_milli(), 0);
  EXPECT_EQ(s.usage(id).used, Resources{});
  EXPECT_TRUE(s.Allocate(whole).ok());
  EXPECT_EQ(s.allocated_gpu_milli(), 1000);
}

TEST(ClusterState, TakenMilliPerSharingMode) {
  ClusterState s;
  NodeSpec n;
  n.name = "mixed";
  n.allocatable = {1000, 1000};
  n.gpus = {MakeGpu(0, "A100-40GB", 40960, SharingMode::kExclusive),
            MakeGpu(1, "A100-40GB", 40960, SharingMode::kTimeSlice),
            MakeGpu(2, "A100-40GB", 40960, SharingMode::kShared),
            MakeGpu(3, "A100-40GB", 40960, SharingMode::kMig)};
  const MigGeometry* geo = FindMigGeometry("A100-40GB");
  n.gpus[3].sharing.mig =
      PlaceMigLayout(*geo, std::vector<std::pair<std::string, int>>{{"3g.20gb", 1}, {"1g.5gb", 4}})
          .value();
  NodeId id = MustAdd(s, n);
  Placement p;
  p.node = id;
  p.devices = {{0, DeviceKind::kWhole, 1000, 40960, 0, 0},
               {1, DeviceKind::kReplica, 250, 0, 0, 1},
               {2, DeviceKind::kShare, 100, 20480, 0, 0},  // memory half beats compute 0.1
               {3, DeviceKind::kMigInstance, 0, 0, 0, 0}};
  // Hold the 3g.20gb instance, wherever the layout put it.
  const int three_g = geo->FindProfile("3g.20gb");
  for (size_t i = 0; i < n.gpus[3].sharing.mig.size(); ++i) {
    if (n.gpus[3].sharing.mig[i].profile == three_g)
      p.devices[3].mig_instance = static_cast<uint8_t>(i);
  }
  ASSERT_TRUE(s.Allocate(p).ok());
  EXPECT_EQ(s.GpuTakenMilli(id, 0), 1000);
  EXPECT_EQ(s.GpuTakenMilli(id, 1), 250);  // 1 of 4 replicas
  EXPECT_EQ(s.GpuTakenMilli(id, 2), 500);
  // 3g.20gb: 4/8 of the memory beats 3/7 of the compute.
  EXPECT_EQ(s.GpuTakenMilli(id, 3), 500);
  EXPECT_EQ(s.allocated_gpu_milli(), 2250);
  ASSERT_TRUE(s.SetGpuHealth(id, 2, GpuHealth::kUnhealthy).ok());
  EXPECT_EQ(s.GpuFreeMilli(id, 2), 0);
  EXPECT_EQ(s.GpuTakenMilli(id, 2), 500);
}

TEST(ClusterState, SeveralInstancesOfOneCardCountOnce) {
  ClusterState s;
  NodeSpec n = MakeNode("mig", 1, "H100-80GB", SharingMode::kMig);
  const MigGeometry* geo = FindMigGeometry("H100-80GB");
  n.gpus[0].sharing.mig =
      PlaceMigLayout(*geo, std::vector<std::pair<std::string, int>>{{"1g.10gb", 7}}).value();
  NodeId id = MustAdd(s, n);
  Placement p;
  p.node = id;
  p.devices = {{0, DeviceKind::kMigInstance, 0, 0, 0, 0},
               {0, DeviceKind::kMigInstance, 0, 0, 1, 0}};
  ASSERT_TRUE(s.Allocate(p).ok());
  EXPECT_EQ(s.allocated_gpu_milli(), 286);  // two 1g.10gb at 143 each
  ASSERT_TRUE(s.Release(p).ok());
  EXPECT_EQ(s.allocated_gpu_milli(), 0);
}

TEST(ClusterState, RecordsTheLatestUsageChangeAndTheOneBefore) {
  ClusterState s;
  const NodeId a = MustAdd(s, MakeNode("a", 2));
  const NodeId b = MustAdd(s, MakeNode("b", 2));
  EXPECT_EQ(s.last_changed_node(), b);
  EXPECT_EQ(s.last_usage_version(), s.usage(b).version);
  const uint64_t before = s.last_usage_version();
  Placement p;
  p.node = a;
  p.devices = {{0, DeviceKind::kWhole, 1000, 81920, 0, 0}};
  ASSERT_TRUE(s.Allocate(p).ok());
  EXPECT_EQ(s.previous_usage_version(), before);
  EXPECT_EQ(s.last_usage_version(), s.usage(a).version);
  EXPECT_EQ(s.last_changed_node(), a);
  ClusterState copy = s;  // a copy carries them; its own changes move only its own
  ASSERT_TRUE(copy.SetUnschedulable(b, true).ok());
  EXPECT_EQ(copy.previous_usage_version(), s.last_usage_version());
  EXPECT_EQ(copy.last_changed_node(), b);
  EXPECT_EQ(s.last_changed_node(), a);
  EXPECT_GT(copy.last_usage_version(), s.last_usage_version());
}

TEST(ClusterState, InternsGpuModelsForTheScan) {
  ClusterState s;
  const NodeId h = MustAdd(s, MakeNode("h", 2, "H100-80GB"));
  const NodeId t = MustAdd(s, MakeNode("t", 1, "T4"));
  const NodeId c = MustAdd(s, MakeNode("c", 0));
  ASSERT_EQ(s.models().size(), 2u);
  EXPECT_EQ(s.models()[0], "H100-80GB");
  EXPECT_EQ(s.models()[1], "T4");
  EXPECT_EQ(s.usage(h).model_mask, 1u);
  EXPECT_EQ(s.usage(t).model_mask, 2u);
  EXPECT_EQ(s.usage(c).model_mask, 0u);
  const std::vector<std::string> t4 = {"T4"}, other = {"A10"}, any;
  EXPECT_EQ(s.AcceptedModelMask(t4) & 3u, 2u);
  EXPECT_EQ(s.AcceptedModelMask(other) & 3u, 0u);
  EXPECT_EQ(s.AcceptedModelMask(any), ~uint64_t{0});
  EXPECT_TRUE(SameModel("V100M16", "V100M16"));
  EXPECT_FALSE(SameModel("V100M16", "V100M32"));
  EXPECT_FALSE(SameModel("T4", "T40"));
}

// A pod pinned to a model no node has is refused with the model named, and the simulator's
// scheduler (no diagnosis) still refuses it, without the per-node reasons.
TEST(ClusterState, APodPinnedToAnAbsentModelFailsWithOrWithoutTheDiagnosis) {
  ClusterState s;
  MustAdd(s, MakeNode("h", 2, "H100-80GB"));
  PodSpec pod = MakePod("p", {{"nvidia.com/gpu", "1"}});
  pod.gpu_models = {"T4"};
  std::unique_ptr<Scheduler> sched = MustScheduler("bestfit");
  PlaceOutcome o = sched->Place(s, pod);
  EXPECT_FALSE(o.ok);
  EXPECT_NE(o.reason.find("T4"), std::string::npos) << o.reason;
  SchedulerConfig quiet;
  quiet.diagnose_failures = false;
  auto q = Scheduler::Create(quiet);
  ASSERT_TRUE(q.ok());
  o = (*q)->Place(s, pod);
  EXPECT_FALSE(o.ok);
  EXPECT_EQ(o.reason, "0/1 nodes are available.");
  pod.gpu_models = {"H100-80GB"};
  EXPECT_TRUE((*q)->Place(s, pod).ok);
}

}  // namespace
}  // namespace tessera::core
