#include "sim/trace.h"

#include <sstream>

#include <gtest/gtest.h>

namespace tessera::sim {
namespace {

TEST(Trace, ReadsAlibabaNodes) {
  std::istringstream in(
      "sn,cpu_milli,memory_mib,gpu,model\n"
      "n0,64000,262144,2,P100\n"
      "n1,96000,786432,0,\n");
  auto nodes = ReadNodes(in, "nodes.csv");
  ASSERT_TRUE(nodes.ok()) << nodes.status().message();
  ASSERT_EQ(nodes->size(), 2u);
  const core::NodeSpec& n0 = (*nodes)[0];
  EXPECT_EQ(n0.name, "n0");
  EXPECT_EQ(n0.allocatable.cpu_milli, 64000);
  EXPECT_EQ(n0.allocatable.memory_mib, 262144);
  ASSERT_EQ(n0.gpus.size(), 2u);
  EXPECT_EQ(n0.gpus[1].model, "P100");
  EXPECT_EQ(n0.gpus[1].index, 1);
  EXPECT_EQ(n0.gpus[1].sharing.mode, core::SharingMode::kShared);
  EXPECT_TRUE((*nodes)[1].gpus.empty());
}

TEST(Trace, ReadsAlibabaPods) {
  std::istringstream in(
      "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,"
      "deletion_time,scheduled_time\n"
      "p0,12000,16384,1,1000,,LS,Running,0,100,0\n"
      "p1,6000,12288,1,460,V100M16|V100M32,LS,Running,5,50,5\n"
      "p2,4000,8192,0,0,,BE,Running,7,,7\n"
      "p3,8000,8192,4,1000,,LS,Running,9,20,9\n");
  auto pods = ReadPods(in, "pods.csv");
  ASSERT_TRUE(pods.ok()) << pods.status().message();
  ASSERT_EQ(pods->size(), 4u);
  EXPECT_EQ((*pods)[0].GpuDemandMilli(), 1000);
  EXPECT_EQ((*pods)[1].GpuDemandMilli(), 460);
  EXPECT_EQ((*pods)[1].gpu_models, (std::vector<std::string>{"V100M16", "V100M32"}));
  EXPECT_EQ((*pods)[1].creation, 5);
  EXPECT_EQ((*pods)[1].deletion, 50);
  EXPECT_EQ((*pods)[2].deletion, -1);
  EXPECT_EQ((*pods)[3].GpuDemandMilli(), 4000);

  core::PodSpec share = ToPodSpec((*pods)[1]);
  EXPECT_EQ(share.gpu.kind, core::GpuRequestKind::kShare);
  EXPECT_EQ(share.gpu.milli, 460);
  core::PodSpec whole = ToPodSpec((*pods)[3]);
  EXPECT_EQ(whole.gpu.kind, core::GpuRequestKind::kWhole);
  EXPECT_EQ(whole.gpu.count, 4);
  EXPECT_EQ(ToPodSpec((*pods)[2]).gpu.kind, core::GpuRequestKind::kNone);
}

TEST(Trace, ReadsGenericPods) {
  std::istringstream in(
      "name,submit_time,duration,cpu_milli,memory_mib,num_gpu,gpu_milli,queue,priority,gang,"
      "gang_size\n"
      "j0-w0,10,3600,8000,32768,8,1000,team-a,100,j0,2\n");
  auto pods = ReadPods(in, "generic.csv");
  ASSERT_TRUE(pods.ok()) << pods.status().message();
  const TracePod& p = (*pods)[0];
  EXPECT_EQ(p.creation, 10);
  EXPECT_EQ(p.deletion, 3610);
  EXPECT_EQ(p.queue, "team-a");
  EXPECT_EQ(p.priority, 100);
  EXPECT_EQ(p.gang, "j0");
  EXPECT_EQ(p.gang_size, 2);
}

struct BadInput {
  const char* name;
  const char* csv;
  const char* error;  // expected substring
};

class TraceRejects : public ::testing::TestWithParam<BadInput> {};

TEST_P(TraceRejects, NamesTheProblem) {
  std::istringstream in(GetParam().csv);
  auto pods = ReadPods(in, "pods.csv");
  ASSERT_FALSE(pods.ok());
  EXPECT_NE(pods.status().message().find(GetParam().error), std::string::npos)
      << pods.status().message();
}

INSTANTIATE_TEST_SUITE_P(
    Pods, TraceRejects,
    ::testing::Values(
        BadInput{"Empty", "", "empty file"},
        BadInput{"UnknownColumn", "name,cpu_milli,memory_mib,num_gpu,gpu_milli,colour\n",
                 "unknown column \"colour\""},
        BadInput{"MissingColumn", "name,cpu_milli,memory_mib,num_gpu\n",
                 "missing column \"gpu_milli\""},
        BadInput{"NegativeCpu", "name,cpu_milli,memory_mib,num_gpu,gpu_milli\np,-1,1,0,0\n",
                 "line 2: column cpu_milli: must be in [0"},
        BadInput{"NotANumber", "name,cpu_milli,memory_mib,num_gpu,gpu_milli\np,1,x,0,0\n",
                 "column memory_mib: must be an integer, got \"x\""},
        BadInput{"TooManyGpus", "name,cpu_milli,memory_mib,num_gpu,gpu_milli\np,1,1,17,1000\n",
                 "column num_gpu"},
        BadInput{"ShareOfMany", "name,cpu_milli,memory_mib,num_gpu,gpu_milli\np,1,1,2,500\n",
                 "a share (< 1000) is of one GPU only"},
        BadInput{"GpuWithoutMilli", "name,cpu_milli,memory_mib,num_gpu,gpu_milli\np,1,1,1,0\n",
                 "must be 1..1000 when num_gpu > 0"},
        BadInput{"RaggedRow", "name,cpu_milli,memory_mib,num_gpu,gpu_milli\np,1,1,1\n",
                 "line 2: 4 cells, header has 5"},
        BadInput{"EndsBeforeStart",
                 "name,cpu_milli,memory_mib,num_gpu,gpu_milli,creation_time,deletion_time\n"
                 "p,1,1,0,0,10,5\n",
                 "ends before it starts"}),
    [](const auto& info) { return std::string(info.param.name); });

TEST(Trace, RejectsBadNodes) {
  std::istringstream no_model("sn,cpu_milli,memory_mib,gpu,model\nn,1,1,2,\n");
  auto a = ReadNodes(no_model, "nodes.csv");
  ASSERT_FALSE(a.ok());
  EXPECT_NE(a.status().message().find("column model: a GPU node needs a model"), std::string::npos);
  std::istringstream bad_mode("sn,cpu_milli,memory_mib,gpu,model,sharing\nn,1,1,2,T4,mps\n");
  auto b = ReadNodes(bad_mode, "nodes.csv");
  ASSERT_FALSE(b.ok());
  EXPECT_NE(b.status().message().find("must be exclusive or shared"), std::string::npos);
}

}  // namespace
}  // namespace tessera::sim
