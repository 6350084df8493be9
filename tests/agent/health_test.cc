#include "agent/health.h"

#include <gtest/gtest.h>

#include <optional>
#include <set>
#include <vector>

namespace tessera::agent {
namespace {

GpuSample Ecc(uint32_t gpu, uint64_t uncorrected) {
  GpuSample s;
  s.index = gpu;
  s.ecc_uncorrected = uncorrected;
  return s;
}

TEST(Health, CriticalXidsAndNewEccErrorsMakeAGpuUnhealthyUntilQuiet) {
  HealthTracker t({std::nullopt, 10'000});
  // Baseline: GPU 1 already had 5 uncorrected errors before the agent started.
  EXPECT_TRUE(t.Observe(0, {Ecc(0, 0), Ecc(1, 5)}, {}).empty());
  EXPECT_TRUE(t.Healthy(1));
  // An ignored XID (13, an application's fault) changes nothing; XID 79 (fell off the bus) does.
  EXPECT_TRUE(t.Observe(1000, {Ecc(0, 0), Ecc(1, 5)}, {{0, 13}}).empty());
  auto c = t.Observe(2000, {Ecc(0, 0), Ecc(1, 5)}, {{0, 79}});
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].gpu, 0u);
  EXPECT_FALSE(c[0].healthy);
  EXPECT_EQ(c[0].reason, "XID 79 (GPU has fallen off the bus): RESTART_BM");
  // A new double-bit error on GPU 1.
  c = t.Observe(3000, {Ecc(0, 0), Ecc(1, 6)}, {});
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].reason, "1 new double-bit ECC error(s)");
  // Another XID on GPU 0 restarts its quiet period: still unhealthy at 12 s, healthy at 15 s.
  EXPECT_TRUE(t.Observe(5000, {Ecc(0, 0), Ecc(1, 6)}, {{0, 79}}).empty());
  c = t.Observe(12'000, {Ecc(0, 0), Ecc(1, 6)}, {});
  ASSERT_EQ(c.size(), 0u);
  c = t.Observe(13'000, {Ecc(0, 0), Ecc(1, 6)}, {});
  ASSERT_EQ(c.size(), 1u);  // GPU 1, quiet since 3 s
  EXPECT_EQ(c[0].gpu, 1u);
  EXPECT_TRUE(c[0].healthy);
  c = t.Observe(15'000, {Ecc(0, 0), Ecc(1, 6)}, {});
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].gpu, 0u);
  EXPECT_TRUE(t.Healthy(0));
}

// By NVIDIA's Xid catalog: RESTART_APP (94, a contained ECC error) and IGNORE (63, a page
// retirement recorded) leave the GPU in service; RESET_GPU (109), a workflow (45) and an XID the
// catalog lacks take it out. An admin's --ignore-xids list replaces the catalog's choice.
TEST(Health, XidsTakeAGpuOutOfServiceByTheirActionInNvidiasCatalog) {
  HealthTracker t({std::nullopt, 10'000});
  const std::vector<GpuSample> gpus = {Ecc(0, 0), Ecc(1, 0), Ecc(2, 0), Ecc(3, 0)};
  EXPECT_TRUE(t.Observe(0, gpus, {}).empty());
  EXPECT_TRUE(t.Observe(1000, gpus, {{0, 94}, {1, 63}}).empty());
  auto c = t.Observe(2000, gpus, {{0, 109}, {1, 45}, {2, 999}});
  ASSERT_EQ(c.size(), 3u);
  EXPECT_EQ(c[0].reason, "XID 109 (Context Switch Timeout Error): RESET_GPU");
  EXPECT_EQ(c[1].reason, "XID 45 (Preemptive cleanup, due to previous errors): WORKFLOW");
  EXPECT_EQ(c[2].reason, "XID 999: UNKNOWN");
  EXPECT_TRUE(t.Healthy(3));

  HealthTracker admin({std::set<uint64_t>{109}, 10'000});
  EXPECT_TRUE(admin.Observe(0, gpus, {{0, 109}}).empty());
  c = admin.Observe(1000, gpus, {{1, 94}});
  ASSERT_EQ(c.size(), 1u) << "the admin's list replaces the catalog's RESTART_APP";
  EXPECT_EQ(c[0].reason, "XID 94 (Contained ECC error): RESTART_APP");
}

}  // namespace
}  // namespace tessera::agent
