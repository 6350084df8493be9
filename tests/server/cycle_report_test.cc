// The report stage of a scheduling cycle on its own: the gauges after the cycle's decisions.
#include <gtest/gtest.h>

#include "core/test_cluster.h"
#include "server/scheduling_loop.h"

namespace tessera::server {
namespace {

core::Placement Whole(core::NodeId node, uint8_t gpu) {
  core::Placement p;
  p.node = node;
  core::DeviceAssignment d;
  d.gpu = gpu;
  d.kind = core::DeviceKind::kWhole;
  d.milli = 1000;
  d.memory_mib = 81920;
  p.devices.push_back(d);
  return p;
}

// Fragmentation is of the cluster as the cycle leaves it (its preemptions released, its
// admissions and growths placed), and each queue's nominal quotas are in GPUs, cores and bytes.
TEST(CycleReport, GaugesAreOfTheClusterAfterTheDecisions) {
  core::ClusterState state;
  const core::NodeId n = core::testing::MustAdd(state, core::testing::MakeNode("n1", 3));
  std::vector<core::AdmittedWorkload> running(1);
  running[0].placements.push_back(Whole(n, 0));
  ASSERT_TRUE(state.Allocate(*running[0].placements[0]).ok());

  core::CycleResult result;
  core::Preemption p;
  p.running_index = 0;
  result.preemptions.push_back(p);
  core::Admission a;
  a.admitted.placements.push_back(Whole(n, 1));
  result.admissions.push_back(a);
  core::Growth g;
  g.placement = Whole(n, 2);
  result.growths.push_back(g);

  core::QueueConfig cfg;
  core::QueueSpec q;
  q.name = "team-a";
  core::ResourceGroup group;
  core::ResourceQuota gpus, memory;
  gpus.resource = core::QuotaResource::kGpu;
  gpus.nominal = 4000;
  memory.resource = core::QuotaResource::kMemory;
  memory.nominal = 1024;
  group.flavors.push_back({"h100", {gpus, memory}});
  q.resource_groups.push_back(group);
  cfg.queues.push_back(q);

  const CycleGauges gauges = GaugesAfter(state, result, running, cfg);
  // GPU 0 freed by the preemption; 1 and 2 taken by the admission and the growth.
  EXPECT_EQ(gauges.fragmentation.free_milli, 1000);
  EXPECT_EQ(gauges.fragmentation.fragmented_milli, 0);
  ASSERT_EQ(gauges.quotas.size(), 2u);
  EXPECT_EQ(gauges.quotas[0].queue, "team-a");
  EXPECT_EQ(gauges.quotas[0].flavor, "h100");
  EXPECT_EQ(gauges.quotas[0].resource, "nvidia.com/gpu");
  EXPECT_DOUBLE_EQ(gauges.quotas[0].nominal, 4.0);
  EXPECT_EQ(gauges.quotas[1].resource, "memory");
  EXPECT_DOUBLE_EQ(gauges.quotas[1].nominal, 1024.0 * 1048576.0);
  // The state handed in is the caller's copy: the caller's own is unchanged.
  EXPECT_EQ(core::FragmentationOf(state).free_milli, 2000);
}

}  // namespace
}  // namespace tessera::server
