#include "agent/health.h"

#include <gtest/gtest.h>

namespace tessera::agent {
namespace {

GpuSample Ecc(uint32_t gpu, uint64_t uncorrected) {
  GpuSample s;
  s.index = gpu;
  s.ecc_uncorrected = uncorrected;
  return s;
}

TEST(Health, CriticalXidsAndNewEccErrorsMakeAGpuUnhealthyUntilQuiet) {
  HealthTracker t({{13, 31, 43, 45, 68, 109}, 10'000});
  // Baseline: GPU 1 already had 5 uncorrected errors before the agent started.
  EXPECT_TRUE(t.Observe(0, {Ecc(0, 0), Ecc(1, 5)}, {}).empty());
  EXPECT_TRUE(t.Healthy(1));
  // An ignored XID (13, an application's fault) changes nothing; XID 79 (fell off the bus) does.
  EXPECT_TRUE(t.Observe(1000, {Ecc(0, 0), Ecc(1, 5)}, {{0, 13}}).empty());
  auto c = t.Observe(2000, {Ecc(0, 0), Ecc(1, 5)}, {{0, 79}});
  ASSERT_EQ(c.size(), 1u);
  EXPECT_EQ(c[0].gpu, 0u);
  EXPECT_FALSE(c[0].healthy);
  EXPECT_EQ(c[0].reason, "XID 79 (critical)");
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

}  // namespace
}  // namespace tessera::agent
