#include "core/devices.h"

#include <gtest/gtest.h>

#include "core/test_cluster.h"

namespace tessera::core {
namespace {

using testing::MakeNode;
using testing::MakePod;
using testing::MustAdd;

struct ReasonCase {
  const char* name;
  SharingMode mode;
  api::ResourceList limits;
  const char* reason;  // empty: candidates expected
};

class DeviceReasonTest : public ::testing::TestWithParam<ReasonCase> {};

TEST_P(DeviceReasonTest, ExplainsWhyNoDeviceFits) {
  const ReasonCase& c = GetParam();
  ClusterState s;
  NodeSpec n = MakeNode("n", 2, "A100-40GB", c.mode, 40960);
  if (c.mode == SharingMode::kMig) {
    const MigGeometry* geo = FindMigGeometry("A100-40GB");
    for (auto& g : n.gpus) {
      g.sharing.mig =
          PlaceMigLayout(*geo, std::vector<std::pair<std::string, int>>{{"3g.20gb", 2}}).value();
    }
  }
  NodeId id = MustAdd(s, n);
  PodSpec pod = MakePod("p", c.limits);
  DeviceRequest req = MakeDeviceRequest(pod);
  std::vector<Candidate> out;
  std::string_view why = ProposeCandidates(req, s, id, out);
  EXPECT_EQ(std::string(why), c.reason);
  EXPECT_EQ(out.empty(), !std::string(c.reason).empty());
}

INSTANTIATE_TEST_SUITE_P(
    Reasons, DeviceReasonTest,
    ::testing::Values(
        ReasonCase{"whole_ok", SharingMode::kExclusive, {{"nvidia.com/gpu", "2"}}, ""},
        // More GPUs than the node has: no wait helps, and the reason says so.
        ReasonCase{"whole_more_than_node",
                   SharingMode::kExclusive,
                   {{"nvidia.com/gpu", "3"}},
                   "node has fewer GPUs than the pod asks: it can never fit"},
        // Time-sliced cards count as their replicas (2 cards x 4).
        ReasonCase{"whole_on_replicas", SharingMode::kTimeSlice, {{"nvidia.com/gpu", "8"}}, ""},
        ReasonCase{"whole_more_than_replicas",
                   SharingMode::kTimeSlice,
                   {{"nvidia.com/gpu", "9"}},
                   "node has fewer GPUs than the pod asks: it can never fit"},
        ReasonCase{"share_on_exclusive",
                   SharingMode::kExclusive,
                   {{"tessera.io/gpu-milli", "100"}},
                   "no GPU allows sharing"},
        ReasonCase{"share_memory",
                   SharingMode::kShared,
                   {{"aliyun.com/gpu-mem", "48"}},
                   "insufficient GPU memory"},
        ReasonCase{"share_two_cards",
                   SharingMode::kShared,
                   {{"nvidia.com/gpu", "3"}, {"nvidia.com/gpumem", "100"}},
                   "insufficient GPU compute"},
        ReasonCase{"mig_profile_missing",
                   SharingMode::kMig,
                   {{"nvidia.com/mig-1g.5gb", "1"}},
                   "no MIG 1g.5gb instance"},
        ReasonCase{"mig_ok", SharingMode::kMig, {{"nvidia.com/mig-3g.20gb", "4"}}, ""},
        ReasonCase{"mig_busy",
                   SharingMode::kMig,
                   {{"nvidia.com/mig-3g.20gb", "5"}},
                   "no free MIG 3g.20gb instance"},
        ReasonCase{"replica_without_timeslice",
                   SharingMode::kShared,
                   {{"nvidia.com/gpu.shared", "1"}},
                   "no time-sliced GPU"},
        ReasonCase{"replica_ok", SharingMode::kTimeSlice, {{"nvidia.com/gpu.shared", "8"}}, ""},
        ReasonCase{"replica_short",
                   SharingMode::kTimeSlice,
                   {{"nvidia.com/gpu.shared", "9"}},
                   "insufficient time-slice replicas"},
        ReasonCase{"mig_for_whole",
                   SharingMode::kMig,
                   {{"nvidia.com/gpu", "1"}},
                   "insufficient free GPUs"}),
    [](const ::testing::TestParamInfo<ReasonCase>& i) { return std::string(i.param.name); });

TEST(Devices, NoGpuNodeAndUnhealthyCards) {
  ClusterState s;
  NodeId cpu = MustAdd(s, MakeNode("cpu", 0));
  NodeId gpu = MustAdd(s, MakeNode("gpu", 1));
  ASSERT_TRUE(s.SetGpuHealth(gpu, 0, GpuHealth::kUnhealthy).ok());
  PodSpec pod = MakePod("p", {{"nvidia.com/gpu", "1"}});
  DeviceRequest req = MakeDeviceRequest(pod);
  std::vector<Candidate> out;
  EXPECT_EQ(ProposeCandidates(req, s, cpu, out), "no GPUs");
  EXPECT_EQ(ProposeCandidates(req, s, gpu, out), "unhealthy or cordoned GPUs");
  PodSpec cpu_pod = MakePod("c", {{"cpu", "1"}});
  DeviceRequest creq = MakeDeviceRequest(cpu_pod);
  EXPECT_EQ(ProposeCandidates(creq, s, cpu, out), "");
}

TEST(Devices, EqualCardsYieldOneShareCandidate) {
  ClusterState s;
  NodeId id = MustAdd(s, MakeNode("n", 8, "A10", SharingMode::kShared, 24576));
  PodSpec pod = MakePod("p", {{"tessera.io/gpu-milli", "300"}});
  DeviceRequest req = MakeDeviceRequest(pod);
  std::vector<Candidate> out;
  ASSERT_EQ(ProposeCandidates(req, s, id, out), "");
  EXPECT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].picks[0].gpu, 0);
}

}  // namespace
}  // namespace tessera::core
