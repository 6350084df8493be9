// The decoders of Tessera's own kinds (api/kinds.h): what each field becomes, and a bad field
// refused with its path.
#include "api/kinds.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

namespace tessera::api {
namespace {

using nlohmann::json;

json Obj(const std::string& kind, json spec, const std::string& ns = "") {
  json meta = {{"name", "x"}};
  if (!ns.empty()) meta["namespace"] = ns;
  return {{"apiVersion", "tessera.io/v1"}, {"kind", kind}, {"metadata", meta}, {"spec", spec}};
}

// Each bad spec is refused by ValidateSpec with a message that starts with its field's path.
void ExpectRefused(const std::string& kind, const std::vector<std::pair<json, std::string>>& cases,
                   const std::string& ns = "") {
  for (const auto& [spec, path] : cases) {
    const Status s = ValidateSpec(Obj(kind, spec, ns));
    EXPECT_FALSE(s.ok()) << kind << " " << spec.dump();
    EXPECT_EQ(s.message().rfind(path, 0), 0u) << kind << " " << spec.dump() << ": " << s.message();
  }
}

TEST(KindsTest, AQueueDecodesItsQuotaPoliciesAndWeights) {
  auto q = DecodeQueue(Obj(
      "Queue",
      {{"cohort", "all"},
       {"queueingStrategy", "StrictFIFO"},
       {"fairSharing", {{"weight", "1.5"}}},
       {"preemption",
        {{"withinClusterQueue", "LowerPriority"},
         {"reclaimWithinCohort", "Any"},
         {"borrowWithinCohort", {{"policy", "LowerPriority"}, {"maxPriorityThreshold", 100}}}}},
       {"idleReclaim", {{"after", "2h"}, {"maxPriority", 10}}},
       {"flavorFungibility", {{"whenCanBorrow", "TryNextFlavor"}, {"whenCanPreempt", "Preempt"}}},
       {"stopPolicy", "Hold"},
       {"reclaimable", false},
       {"resourceGroups",
        {{{"coveredResources", {"nvidia.com/gpu", "memory"}},
          {"flavors",
           {{{"name", "a100"},
             {"resources",
              {{{"name", "nvidia.com/gpu"}, {"nominalQuota", 8}, {"borrowingLimit", "4"}},
               {{"name", "memory"}, {"nominalQuota", "64Gi"}, {"lendingLimit", "32Gi"}}}}}}}}}}}));
  ASSERT_TRUE(q.ok()) << q.status().message();
  EXPECT_EQ(q->cohort, "all");
  EXPECT_EQ(q->strategy, core::QueueingStrategy::kStrictFifo);
  EXPECT_EQ(q->fair_weight_milli, 1500);
  EXPECT_EQ(q->preemption.within_queue, core::WithinQueuePreemption::kLowerPriority);
  EXPECT_EQ(q->preemption.reclaim_within_cohort, core::ReclaimPreemption::kAny);
  EXPECT_EQ(q->preemption.borrow_within_cohort, core::BorrowWithinCohort::kLowerPriority);
  EXPECT_EQ(q->preemption.max_priority_threshold, 100);
  EXPECT_EQ(q->idle_reclaim.after_ms, 2 * 3'600'000);
  EXPECT_EQ(q->idle_reclaim.max_priority, 10);
  EXPECT_TRUE(q->try_next_flavor_before_borrowing);
  EXPECT_TRUE(q->preempt_before_next_flavor);
  EXPECT_EQ(q->stop, core::StopPolicy::kHold);
  EXPECT_FALSE(q->reclaimable);
  ASSERT_EQ(q->resource_groups.size(), 1u);
  const core::FlavorQuotas& f = q->resource_groups[0].flavors[0];
  EXPECT_EQ(f.flavor, "a100");
  EXPECT_EQ(f.resources[0].nominal, 8000) << "GPUs in thousandths";
  EXPECT_EQ(f.resources[0].borrowing_limit, 4000);
  EXPECT_EQ(f.resources[1].nominal, 64 * 1024) << "memory in MiB";
  EXPECT_EQ(f.resources[1].lending_limit, 32 * 1024);

  ExpectRefused(
      "Queue",
      {
          {{{"queueingStrategy", "Fifo"}}, "spec.queueingStrategy"},
          {{{"preemption", {{"withinClusterQueue", "Always"}}}},
           "spec.preemption.withinClusterQueue"},
          {{{"fairSharing", {{"weight", "heavy"}}}}, "spec.fairSharing.weight"},
          {{{"idleReclaim", {{"maxPriority", 1}}}}, "spec.idleReclaim.after"},
          {{{"resourceGroups",
             {{{"flavors", {{{"name", "f"}, {"resources", {{{"name", "tpu"}}}}}}}}}}},
           "spec.resourceGroups[0].flavors[0].resources[0].name"},
          {{{"resourceGroups",
             {{{"flavors", {{{"name", "f"}, {"resources", {{{"name", "cpu"}}}}}}}}}}},
           "spec.resourceGroups[0].flavors[0].resources[0].nominalQuota"},
          {{{"resourceGroups",
             {{{"flavors",
                {{{"name", "f"}, {"resources", {{{"name", "cpu"}, {"nominalQuota", "-1"}}}}}}}}}}},
           "spec.resourceGroups[0].flavors[0].resources[0].nominalQuota"},
          {{{"cohrt", "x"}}, "spec.cohrt"},
      });
}

TEST(KindsTest, ASharingConfigTakesExactlyOneMode) {
  auto ts = DecodeGpuSharingConfig(
      Obj("GpuSharingConfig", {{"nodeSelector", {{"pool", "a"}}},
                               {"gpus", {"0", "GPU-1"}},
                               {"timeSlicing", {{"replicas", 4}, {"renameByDefault", true}}}}));
  ASSERT_TRUE(ts.ok()) << ts.status().message();
  EXPECT_EQ(ts->sharing.mode, core::SharingMode::kTimeSlice);
  EXPECT_EQ(ts->sharing.replicas, 4);
  EXPECT_TRUE(ts->sharing.rename);
  EXPECT_EQ(ts->gpus, (std::vector<std::string>{"0", "GPU-1"}));
  auto mig = DecodeGpuSharingConfig(
      Obj("GpuSharingConfig", {{"default", true}, {"mig", {{"layout", {{"1g.10gb", 7}}}}}}));
  ASSERT_TRUE(mig.ok()) << mig.status().message();
  EXPECT_TRUE(mig->is_default);
  EXPECT_EQ(mig->sharing.mode, core::SharingMode::kMig);
  ASSERT_EQ(mig->mig_layout.size(), 1u);
  EXPECT_EQ(mig->mig_layout[0], (std::pair<std::string, int>{"1g.10gb", 7}));

  ExpectRefused(
      "GpuSharingConfig",
      {
          {json::object(), "spec: must set exactly one of"},
          {{{"exclusive", json::object()}, {"shared", json::object()}},
           "spec: must set exactly one"},
          {{{"timeSlicing", {{"replicas", 1}}}}, "spec.timeSlicing.replicas"},
          {{{"mig", {{"layout", json::object()}}}}, "spec.mig.layout"},
          {{{"mig", {{"layout", {{"9g.99gb", 1}}}}}}, "spec.mig.layout"},
          {{{"default", true}, {"nodeSelector", {{"a", "b"}}}, {"exclusive", json::object()}},
           "spec.default"},
      });
}

TEST(KindsTest, QuotasPriorityClassesAndLocalQueues) {
  auto nq = DecodeNamespaceQuota(Obj("NamespaceQuota",
                                     {{"hard",
                                       {{"requests.nvidia.com/gpu", "8"},
                                        {"limits.nvidia.com/gpu", "6"},
                                        {"memory", "1Ti"},
                                        {"count/pods", 40}}}},
                                     "team-a"));
  ASSERT_TRUE(nq.ok()) << nq.status().message();
  EXPECT_EQ(nq->hard[0], 6000) << "requests and limits cap the same charge: the tighter holds";
  EXPECT_EQ(nq->hard[2], 1024 * 1024);
  EXPECT_EQ(nq->pods, 40);
  ExpectRefused("NamespaceQuota",
                {{{{"hard", {{"tpu", "1"}}}}, "spec.hard.tpu"},
                 {{{"hard", {{"pods", "1.5"}}}}, "spec.hard.pods"}},
                "team-a");

  auto pc = DecodePriorityClass(Obj(
      "PriorityClass", {{"value", 1000}, {"preemptionPolicy", "Never"}, {"globalDefault", true}}));
  ASSERT_TRUE(pc.ok()) << pc.status().message();
  EXPECT_EQ(pc->value, 1000);
  EXPECT_EQ(pc->preemption, core::PreemptionPolicyKind::kNever);
  EXPECT_TRUE(pc->global_default);
  ExpectRefused("PriorityClass",
                {{json::object(), "spec.value"},
                 {{{"value", 2'000'000'000}}, "spec.value"},
                 {{{"value", 1}, {"preemptionPolicy", "Sometimes"}}, "spec.preemptionPolicy"}});

  auto lq = DecodeLocalQueue(Obj("LocalQueue", {{"queue", "research"}}, "team-a"));
  ASSERT_TRUE(lq.ok());
  EXPECT_EQ(lq->queue, "research") << "Tessera's older name";
  ExpectRefused("LocalQueue", {{json::object(), "spec.clusterQueue"}}, "team-a");
}

// The admin's per-GPU cordon: the annotation names cards by UUID or index; those are kCordoned
// (no new work), an unhealthy one not named stays unhealthy, and a name the node lacks is
// nothing.
TEST(KindsTest, ANodesCordonedGpusAreTakenOutOfService) {
  json node = {
      {"apiVersion", "tessera.io/v1"},
      {"kind", "Node"},
      {"metadata",
       {{"name", "n1"}, {"annotations", {{"tessera.io/cordoned-gpus", " GPU-b , 0,GPU-zz"}}}}},
      {"status",
       {{"gpus",
         {{{"index", 0}, {"uuid", "GPU-a"}, {"model", "A100"}, {"memoryMiB", 40960}},
          {{"index", 1}, {"uuid", "GPU-b"}, {"model", "A100"}, {"memoryMiB", 40960}},
          {{"index", 2},
           {"uuid", "GPU-c"},
           {"model", "A100"},
           {"memoryMiB", 40960},
           {"health", "Unhealthy"}},
          {{"index", 3}, {"uuid", "GPU-d"}, {"model", "A100"}, {"memoryMiB", 40960}}}}}}};
  auto n = DecodeNode(node);
  ASSERT_TRUE(n.ok()) << n.status().message();
  ASSERT_EQ(n->gpus.size(), 4u);
  EXPECT_EQ(n->gpus[0].health, core::GpuHealth::kCordoned);
  EXPECT_EQ(n->gpus[1].health, core::GpuHealth::kCordoned);
  EXPECT_EQ(n->gpus[2].health, core::GpuHealth::kUnhealthy);
  EXPECT_EQ(n->gpus[3].health, core::GpuHealth::kHealthy);
  EXPECT_EQ(CordonedGpus(node), (std::vector<std::string>{"GPU-b", "0", "GPU-zz"}));
}

}  // namespace
}  // namespace tessera::api
