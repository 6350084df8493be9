#include "core/xid.h"

#include <gtest/gtest.h>

namespace tessera::core {
namespace {

// The catalog's action classes as NVIDIA's Xid documentation lists them.
TEST(Xid, EachXidHasNvidiasActionAndOnlyTheSeriousOnesTakeTheGpuOutOfService) {
  for (uint64_t x : {13, 31, 94}) EXPECT_EQ(LookupXid(x).action, XidAction::kRestartApp) << x;
  for (uint64_t x : {43, 63, 92}) {
    EXPECT_FALSE(TakesGpuOutOfService(LookupXid(x).action)) << x;
  }
  for (uint64_t x : {46, 62, 64, 95, 109, 119, 120, 136, 140, 143}) {
    EXPECT_EQ(LookupXid(x).action, XidAction::kResetGpu) << x;
    EXPECT_TRUE(TakesGpuOutOfService(LookupXid(x).action)) << x;
  }
  EXPECT_EQ(LookupXid(79).action, XidAction::kRestartBareMetal);
  for (uint64_t x : {45, 48, 74}) EXPECT_EQ(LookupXid(x).action, XidAction::kWorkflow) << x;
  EXPECT_EQ(LookupXid(63).action, XidAction::kIgnore);
  // Not in the catalog: the safe side.
  EXPECT_EQ(LookupXid(12345).action, XidAction::kUnknown);
  EXPECT_TRUE(TakesGpuOutOfService(XidAction::kUnknown));
  EXPECT_EQ(DescribeXid(48), "XID 48 (Double Bit ECC Error): WORKFLOW");
  EXPECT_EQ(DescribeXid(140), "XID 140: RESET_GPU");
}

}  // namespace
}  // namespace tessera::core
