#include "api/resources.h"

#include <gtest/gtest.h>

namespace tessera::api {
namespace {

using core::GpuRequestKind;

struct Case {
  const char* name;
  ResourceList limits;
  ResourceList requests;
  GpuRequestKind kind;
  int count;
  int milli;
  int64_t memory_mib;
  const char* error;  // substring; nullptr: valid
};

class ResourcesTest : public ::testing::TestWithParam<Case> {};

TEST_P(ResourcesTest, Translates) {
  const Case& c = GetParam();
  core::PodSpec pod;
  Status s = ApplyContainerResources(c.limits, c.requests, "spec.containers[0].resources", &pod);
  if (c.error) {
    ASSERT_FALSE(s.ok());
    EXPECT_NE(s.message().find(c.error), std::string::npos) << s.message();
    return;
  }
  ASSERT_TRUE(s.ok()) << s.message();
  EXPECT_EQ(pod.gpu.kind, c.kind);
  EXPECT_EQ(pod.gpu.count, c.count);
  EXPECT_EQ(pod.gpu.milli, c.milli);
  EXPECT_EQ(pod.gpu.memory_mib, c.memory_mib);
}

INSTANTIATE_TEST_SUITE_P(
    Names, ResourcesTest,
    ::testing::Values(
        Case{"whole", {{"nvidia.com/gpu", "2"}}, {}, GpuRequestKind::kWhole, 2, 0, 0, nullptr},
        Case{"zero", {{"nvidia.com/gpu", "0"}}, {}, GpuRequestKind::kNone, 0, 0, 0, nullptr},
        Case{"replica",
             {{"nvidia.com/gpu.shared", "1"}},
             {},
             GpuRequestKind::kReplica,
             1,
             0,
             0,
             nullptr},
        Case{"mig", {{"nvidia.com/mig-1g.5gb", "1"}}, {}, GpuRequestKind::kMig, 1, 0, 0, nullptr},
        Case{"milli",
             {{"tessera.io/gpu-milli", "250"}},
             {},
             GpuRequestKind::kShare,
             1,
             250,
             0,
             nullptr},
        Case{"cgpu",
             {{"aliyun.com/gpu-mem", "8"}, {"aliyun.com/gpu-core", "50"}},
             {{"aliyun.com/gpu-mem", "8"}, {"aliyun.com/gpu-core", "50"}},
             GpuRequestKind::kShare,
             1,
             500,
             8192,
             nullptr},
        Case{
            "hami",
            {{"nvidia.com/gpu", "2"}, {"nvidia.com/gpumem", "3000"}, {"nvidia.com/gpucores", "30"}},
            {},
            GpuRequestKind::kShare,
            2,
            300,
            3000,
            nullptr},
        Case{"negative",
             {{"nvidia.com/gpu", "-2"}},
             {},
             GpuRequestKind::kNone,
             0,
             0,
             0,
             "spec.containers[0].resources.limits.nvidia.com/gpu: must be a positive integer, "
             "got \"-2\""},
        Case{"fraction",
             {{"nvidia.com/gpu", "1.5"}},
             {},
             GpuRequestKind::kNone,
             0,
             0,
             0,
             "must be a positive integer"},
        Case{
            "absurd", {{"nvidia.com/gpu", "100000"}}, {}, GpuRequestKind::kNone, 0, 0, 0, "absurd"},
        Case{"unknown",
             {{"example.com/fpga", "1"}},
             {},
             GpuRequestKind::kNone,
             0,
             0,
             0,
             "unknown resource \"example.com/fpga\""},
        Case{"mismatch",
             {{"nvidia.com/gpu", "2"}},
             {{"nvidia.com/gpu", "1"}},
             GpuRequestKind::kNone,
             0,
             0,
             0,
             "must equal the limit"},
        Case{"two-kinds",
             {{"nvidia.com/gpu.shared", "1"}, {"nvidia.com/mig-1g.5gb", "1"}},
             {},
             GpuRequestKind::kNone,
             0,
             0,
             0,
             "one kind of GPU resource"},
        Case{"core-range",
             {{"aliyun.com/gpu-core", "150"}},
             {},
             GpuRequestKind::kNone,
             0,
             0,
             0,
             "[1, 100]"},
        Case{"milli-range",
             {{"tessera.io/gpu-milli", "0"}},
             {},
             GpuRequestKind::kNone,
             0,
             0,
             0,
             "[1, 1000]"},
        Case{"bad-cpu",
             {{"cpu", "lots"}},
             {},
             GpuRequestKind::kNone,
             0,
             0,
             0,
             "limits.cpu: must start with a number"}),
    [](const ::testing::TestParamInfo<Case>& i) {
      std::string n = i.param.name;
      for (char& ch : n)
        if (ch == '-') ch = '_';
      return n;
    });

TEST(Resources, CpuAndMemoryAddUpAcrossContainers) {
  core::PodSpec pod;
  ASSERT_TRUE(
      ApplyContainerResources({{"cpu", "2"}, {"memory", "1Gi"}}, {{"cpu", "500m"}}, "c0", &pod)
          .ok());
  ASSERT_TRUE(ApplyContainerResources({{"cpu", "1"}}, {}, "c1", &pod).ok());
  EXPECT_EQ(pod.requests.cpu_milli, 1500);  // requests win over limits: 500m + 1
  EXPECT_EQ(pod.requests.memory_mib, 1024);
  EXPECT_TRUE(ApplyContainerResources({{"nvidia.com/gpu", "1"}}, {}, "c2", &pod).ok());
  Status second = ApplyContainerResources({{"nvidia.com/gpu", "1"}}, {}, "c3", &pod);
  EXPECT_NE(second.message().find("only one container"), std::string::npos) << second.message();
}

TEST(Resources, GpuModels) {
  EXPECT_EQ(ParseGpuModels("V100M16|V100M32"), (std::vector<std::string>{"V100M16", "V100M32"}));
  EXPECT_TRUE(ParseGpuModels("").empty());
}

}  // namespace
}  // namespace tessera::api
