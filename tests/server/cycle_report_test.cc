// The report stage of a scheduling cycle on its own: the gauges after the cycle's decisions,
// and the idle marks from what the accountant finds.
#include "server/cycle_report.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/test_cluster.h"
#include "server/cycle_fixture.h"

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

class MarkIdleTest : public CycleStageTest {
 protected:
  // Job "train" (one pod, one GPU) admitted by the loop, in a queue that reclaims after
  // `after_ms` of idleness (0: never).
  void SetUp() override {
    CycleStageTest::SetUp();
    ApplyNode("n1", 1);
    Apply(JobYaml("train", 1, 1));
    Cycle();
    ASSERT_EQ(Job("train")["status"]["phase"], "Admitted");
  }
  bool Mark(const std::vector<core::IdlePod>& idle, int64_t after_ms = 0,
            std::set<std::string, std::less<>> released = {}) {
    CycleReader reader(*plane_, 0);
    CycleSnapshot snap = Read(reader);
    EXPECT_EQ(snap.running.size(), 1u);
    for (core::QueueSpec& q : snap.cfg.queues) q.idle_reclaim.after_ms = after_ms;
    auto writes = Writes();
    const bool reclaimed = MarkIdle(now_, idle, {}, snap, released, *writes);
    writes->Flush();
    EXPECT_EQ(writes->conflicts(), 0);
    return reclaimed;
  }
  std::vector<core::IdlePod> IdleSince(int64_t since_ms) {
    core::IdlePod p;
    p.ns = "default";
    p.job = "train";
    p.pod = "worker-0";
    p.idle_since_ms = since_ms;
    p.gpu_milli = 1000;
    return {p};
  }
};

TEST_F(MarkIdleTest, IdlePodsMarkTheirJobOnceAndBusyAgainClearsIt) {
  const int64_t since = now_ - 3'600'000;
  EXPECT_FALSE(Mark(IdleSince(since)));
  nlohmann::json status = Job("train")["status"];
  ASSERT_TRUE(status.contains("idle")) << status.dump();
  EXPECT_EQ(status["idle"]["pods"], nlohmann::json::array({"worker-0"}));
  EXPECT_NE(status["idle"]["message"].get<std::string>().find("below 5% utilisation"),
            std::string::npos);
  now_ += 1000;
  EXPECT_FALSE(Mark(IdleSince(since)));  // the same mark: no new write, no second event
  int idle_events = 0;
  for (const std::string& e : Events("train")) idle_events += e.rfind("Idle: ", 0) == 0;
  EXPECT_EQ(idle_events, 1);
  now_ += 1000;
  EXPECT_FALSE(Mark({}));
  EXPECT_FALSE(Job("train")["status"].contains("idle"));
  EXPECT_EQ(Events("train").back(), "Busy: its GPUs are in use again");
  EXPECT_EQ(Job("train")["status"]["phase"], "Admitted");
}

TEST_F(MarkIdleTest, QueueReclaimsAJobIdleLongerThanItsPolicyUnlessReleased) {
  const int64_t since = now_ - 3'600'000;
  EXPECT_FALSE(Mark(IdleSince(since), 7'200'000));  // idle for less than the policy's 2 h
  EXPECT_EQ(Job("train")["status"]["phase"], "Admitted");
  EXPECT_FALSE(Mark(IdleSince(since), 1'800'000, {"default/train"}));  // preempted this cycle
  EXPECT_EQ(Job("train")["status"]["phase"], "Admitted");
  EXPECT_TRUE(Mark(IdleSince(since), 1'800'000));
  const nlohmann::json status = Job("train")["status"];
  EXPECT_EQ(status["phase"], "Failed");
  EXPECT_NE(status["message"].get<std::string>().find("reclaimed by queue"), std::string::npos);
  EXPECT_FALSE(status.contains("idle"));
}

}  // namespace
}  // namespace tessera::server
