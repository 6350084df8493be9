#include "server/metrics.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "api/time.h"
#include "server/change_feed.h"
#include "server/lease_book.h"
#include "server/object_cache.h"
#include "store/memory_store.h"

namespace tessera::server {
namespace {

using nlohmann::json;

constexpr int64_t kNow = 1'800'000'000'000;

class MetricsTest : public ::testing::Test {
 protected:
  void Put(const std::string& kind, const std::string& ns, const std::string& name,
           const json& body) {
    const store::Write w{store::Write::Op::kPut, {kind, ns, name}, body.dump(), {}};
    ASSERT_TRUE(store_.Commit({&w, 1}).ok());
    feed_.CatchUp();
  }
  std::string Render(std::vector<core::IdlePod> idle = {}) {
    return RenderMetrics(cache_, leases_, scheduler_, idle, kNow);
  }
  // The line of `out` that starts with `prefix`, or "".
  static std::string Line(const std::string& out, const std::string& prefix) {
    for (size_t at = 0; at < out.size();) {
      const size_t end = out.find('\n', at);
      const std::string line = out.substr(at, end - at);
      if (line.rfind(prefix, 0) == 0) return line;
      if (end == std::string::npos) break;
      at = end + 1;
    }
    return "";
  }

  store::MemoryStore store_;
  ChangeFeed feed_{store_};
  ObjectCache cache_{store_, feed_};
  LeaseBook leases_;
  SchedulerMetrics scheduler_;
};

// A GPU's telemetry under dcgm-exporter's names, labelled with the pod holding it (a shared GPU
// has a series per holder, an unheld one a series without), and the allocation per queue and
// namespace, the cluster's GPUs and the node's heartbeat age.
TEST_F(MetricsTest, GpuTelemetryCarriesItsHoldersAndAllocationIsCounted) {
  Put("Node", "", "n1",
      {{"metadata", {{"name", "n1"}}},
       {"status",
        {{"heartbeat", api::FormatTime(kNow - 4'000)},
         {"gpus",
          {{{"index", 0}, {"uuid", "GPU-0"}, {"model", "A100-SXM4-80GB"}},
           {{"index", 1},
            {"uuid", "GPU-1"},
            {"model", "A100-SXM4-80GB"},
            {"health", "Unhealthy"}}}},
         {"telemetry",
          {{{"index", 0}, {"utilizationPct", 37}, {"temperatureC", 61}},
           {{"index", 1}, {"utilizationPct", 0}}}}}}});
  const json pods = {{{"name", "worker-0"},
                      {"node", "n1"},
                      {"devices", {{{"uuid", "GPU-0"}, {"gpuMilli", 500}}}}}};
  Put("Job", "team-a", "train",
      {{"metadata", {{"namespace", "team-a"}, {"name", "train"}}},
       {"spec", {{"queue", "research"}}},
       {"status", {{"phase", "Admitted"}, {"queue", "research"}, {"pods", pods}}}});
  Put("Job", "team-b", "infer",
      {{"metadata", {{"namespace", "team-b"}, {"name", "infer"}}},
       {"status", {{"phase", "Admitted"}, {"queue", "serving"}, {"pods", pods}}}});
  Put("Job", "team-b", "waits",
      {{"metadata", {{"namespace", "team-b"}, {"name", "waits"}}},
       {"status", {{"phase", "Pending"}, {"queue", "serving"}}}});
  scheduler_.ObserveCycle(0.25, 2, 1, 1);
  const std::string out = Render();

  EXPECT_NE(out.find("DCGM_FI_DEV_GPU_UTIL{Hostname=\"n1\",UUID=\"GPU-0\",device=\"nvidia0\","
                     "gpu=\"0\",job=\"train\",modelName=\"A100-SXM4-80GB\",namespace=\"team-a\","
                     "task=\"worker\"} 37"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("job=\"infer\",modelName=\"A100-SXM4-80GB\",namespace=\"team-b\""),
            std::string::npos)
      << "a shared GPU has a series per holder";
  EXPECT_NE(out.find("DCGM_FI_DEV_GPU_UTIL{Hostname=\"n1\",UUID=\"GPU-1\",device=\"nvidia1\","
                     "gpu=\"1\",job=\"\",modelName=\"A100-SXM4-80GB\",namespace=\"\",task=\"\"} 0"),
            std::string::npos)
      << out;
  EXPECT_NE(out.find("DCGM_FI_DEV_GPU_TEMP{Hostname=\"n1\",UUID=\"GPU-0\""), std::string::npos);
  EXPECT_EQ(out.find("DCGM_FI_DEV_GPU_TEMP{Hostname=\"n1\",UUID=\"GPU-1\""), std::string::npos)
      << "a GPU without the field has no series of it";
  EXPECT_EQ(Line(out, "tessera_gpu_unhealthy{Hostname=\"n1\",UUID=\"GPU-1\""),
            "tessera_gpu_unhealthy{Hostname=\"n1\",UUID=\"GPU-1\",gpu=\"1\"} 1");
  EXPECT_EQ(Line(out, "tessera_queue_gpus_allocated{queue=\"research\"}"),
            "tessera_queue_gpus_allocated{queue=\"research\"} 0.5");
  EXPECT_EQ(Line(out, "tessera_namespace_gpus_allocated{namespace=\"team-b\"}"),
            "tessera_namespace_gpus_allocated{namespace=\"team-b\"} 0.5");
  EXPECT_EQ(Line(out, "tessera_cluster_gpus{state=\"total\"}"),
            "tessera_cluster_gpus{state=\"total\"} 2");
  EXPECT_EQ(Line(out, "tessera_cluster_gpus{state=\"allocated\"}"),
            "tessera_cluster_gpus{state=\"allocated\"} 1");
  EXPECT_EQ(Line(out, "tessera_workloads{phase=\"Pending\",queue=\"serving\"}"),
            "tessera_workloads{phase=\"Pending\",queue=\"serving\"} 1");
  EXPECT_EQ(Line(out, "tessera_node_heartbeat_age_seconds{node=\"n1\"}"),
            "tessera_node_heartbeat_age_seconds{node=\"n1\"} 4");
  EXPECT_EQ(Line(out, "tessera_admissions_total"), "tessera_admissions_total 2");
  EXPECT_EQ(Line(out, "tessera_preemptions_total"), "tessera_preemptions_total 1");
}

// Idle pods are reported with how long they have held their GPUs idle.
TEST_F(MetricsTest, IdlePodsAreReported) {
  core::IdlePod p;
  p.ns = "team-a";
  p.job = "train";
  p.pod = "worker-0";
  p.queue = "research";
  p.idle_since_ms = kNow - 3'600'000;
  p.gpu_milli = 2000;
  const std::string out = Render({p});
  const std::string idle = Line(out, "tessera_idle_seconds{");
  EXPECT_NE(idle.find("namespace=\"team-a\""), std::string::npos) << out;
  EXPECT_NE(idle.find("pod=\"worker-0\""), std::string::npos) << idle;
  EXPECT_NE(idle.find("} 3600"), std::string::npos) << idle;
  EXPECT_NE(Line(out, "tessera_idle_gpus_allocated{").find("} 2"), std::string::npos) << out;
}

}  // namespace
}  // namespace tessera::server
