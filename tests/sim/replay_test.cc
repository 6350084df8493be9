#include "sim/replay.h"

#include <gtest/gtest.h>

#include <sstream>

#include "sim/parallel.h"

namespace tessera::sim {
namespace {

Trace OneGpuCluster(const std::string& pods_csv) {
  Trace t;
  t.name = "hand";
  std::istringstream nodes("sn,cpu_milli,memory_mib,gpu,model\nn1,32000,131072,1,A10\n");
  t.nodes = *ReadNodes(nodes, "nodes");
  std::istringstream pods(pods_csv);
  auto p = ReadPods(pods, "pods");
  EXPECT_TRUE(p.ok()) << p.status().message();
  t.pods = std::move(p).value();
  return t;
}

Result<ReplayRun> Replay(const Trace& t, double speedup = 1) {
  ReplayConfig c;
  c.policy = "bestfit";
  c.speedup = speedup;
  c.samples = 5;
  auto runs = RunReplays(t, std::vector<std::string>{c.policy}, c, 1);
  if (!runs.ok()) return runs.status();
  return (*runs)[0];
}

TEST(Replay, ThreeOneGpuJobsOnOneGpuQueueOneAfterAnother) {
  // All arrive at 0 and run 100 s: they run back to back.
  const Trace t = OneGpuCluster(
      "name,submit_time,duration,cpu_milli,memory_mib,num_gpu,gpu_milli\n"
      "a,0,100,1000,1024,1,1000\nb,0,100,1000,1024,1,1000\nc,0,100,1000,1024,1,1000\n"
      "late,400,50,1000,1024,1,1000\n");
  auto r = Replay(t);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->workloads, 4);
  EXPECT_EQ(r->completed, 4);
  EXPECT_EQ(r->never_admitted, 0);
  // Queue delays 0, 100, 200 (and 0 for the late one); completion times 100, 200, 300, 50.
  EXPECT_EQ(r->queue_delay_s.count, 4);
  EXPECT_DOUBLE_EQ(r->queue_delay_s.max, 200);
  EXPECT_DOUBLE_EQ(r->queue_delay_s.p50, 0);
  EXPECT_DOUBLE_EQ(r->queue_delay_s.mean, 75);
  EXPECT_DOUBLE_EQ(r->jct_s.p50, 100);
  EXPECT_DOUBLE_EQ(r->jct_s.max, 300);
  // Over the arrival window [0, 400]: busy for 300 s, idle for 100.
  EXPECT_EQ(r->span_s, 400);
  EXPECT_DOUBLE_EQ(r->mean_alloc_pct, 75);
  EXPECT_DOUBLE_EQ(r->peak_alloc_pct, 100);
  ASSERT_EQ(r->alloc_pct.size(), 5u);
  EXPECT_EQ(r->alloc_pct[1], (std::pair<int64_t, double>{100, 100}));
  EXPECT_EQ(r->alloc_pct[4], (std::pair<int64_t, double>{400, 100}));  // "late" runs
  // Twice as fast: "late" arrives at 200, so it waits for c until 300.
  auto fast = Replay(t, 2);
  ASSERT_TRUE(fast.ok());
  EXPECT_DOUBLE_EQ(fast->queue_delay_s.max, 200);
  EXPECT_DOUBLE_EQ(fast->jct_s.max, 300);
  EXPECT_EQ(fast->span_s, 200);
}

TEST(Replay, HigherPriorityPreemptsAndTheVictimStartsOver) {
  const Trace t = OneGpuCluster(
      "name,submit_time,duration,cpu_milli,memory_mib,num_gpu,gpu_milli,queue,priority\n"
      "low,0,100,1000,1024,1,1000,q,0\nhigh,50,100,1000,1024,1,1000,q,10\n");
  auto r = Replay(t);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->preemptions, 1);
  EXPECT_EQ(r->completed, 2);
  // high: admitted at 50, done at 150; low: restarts at 150, done at 250.
  EXPECT_DOUBLE_EQ(r->jct_s.max, 250);
  EXPECT_DOUBLE_EQ(r->jct_s.p50, 100);
}

TEST(Replay, AGangStartsWhole) {
  // Two 1-GPU members need each other: on one GPU the gang never starts; the single pod does.
  const Trace t = OneGpuCluster(
      "name,submit_time,duration,cpu_milli,memory_mib,num_gpu,gpu_milli,gang,gang_size\n"
      "g0,0,100,1000,1024,1,1000,g,2\ng1,0,100,1000,1024,1,1000,g,2\n"
      "solo,10,100,1000,1024,1,1000,,0\n");
  auto r = Replay(t);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->workloads, 2);
  EXPECT_EQ(r->admitted, 1);
  EXPECT_EQ(r->never_admitted, 1);
  EXPECT_EQ(r->completed, 1);
}

TEST(Replay, Percentiles) {
  std::vector<double> v = {5, 1, 4, 2, 3, 6, 7, 8, 9, 10};
  const Percentiles p = PercentilesOf(v);
  EXPECT_EQ(p.count, 10);
  EXPECT_DOUBLE_EQ(p.p50, 5);
  EXPECT_DOUBLE_EQ(p.p90, 9);
  EXPECT_DOUBLE_EQ(p.p99, 10);
  EXPECT_DOUBLE_EQ(p.mean, 5.5);
  std::vector<double> none;
  EXPECT_EQ(PercentilesOf(none).count, 0);
}

TEST(Replay, BundledTraceRunsAndEveryJobIsAdmittedAtTracedLoad) {
  std::vector<core::NodeSpec> nodes = *LoadNodes(
      std::string(TESSERA_DATA_DIR) + "/traces/alibaba-gpu-v2023/openb_node_list_gpu_node.csv");
  Trace t;
  t.name = "openb_pod_list_default";
  t.nodes = std::move(nodes);
  t.pods = *LoadPods(std::string(TESSERA_DATA_DIR) +
                     "/traces/alibaba-gpu-v2023/openb_pod_list_default.csv");
  auto r = Replay(t, 1000);
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->workloads, 8152);
  EXPECT_EQ(r->admitted + r->never_admitted, r->workloads);
  EXPECT_GT(r->peak_alloc_pct, r->mean_alloc_pct);
  EXPECT_GT(r->completed, 8000);
}

}  // namespace
}  // namespace tessera::sim
