// Builders for small clusters used across core tests.
#ifndef TESSERA_TESTS_CORE_TEST_CLUSTER_H_
#define TESSERA_TESTS_CORE_TEST_CLUSTER_H_

#include <gtest/gtest.h>

#include <string>
#include <utility>
#include <vector>

#include "api/resources.h"
#include "core/cluster_state.h"
#include "core/scheduler.h"

namespace tessera::core::testing {

inline GpuDevice MakeGpu(int index, std::string model = "H100-80GB", int64_t mem = 81920,
                         SharingMode mode = SharingMode::kExclusive, int numa = 0, int link = 0) {
  GpuDevice g;
  g.index = static_cast<uint16_t>(index);
  g.uuid = "GPU-test-" + std::to_string(index);
  g.model = std::move(model);
  g.memory_mib = mem;
  g.numa_node = static_cast<int16_t>(numa);
  g.nvlink_domain = static_cast<int16_t>(link);
  g.sharing.mode = mode;
  if (mode == SharingMode::kTimeSlice) g.sharing.replicas = 4;
  return g;
}

// A node with `gpus` cards of one model and mode.
inline NodeSpec MakeNode(std::string name, int gpus, std::string model = "H100-80GB",
                         SharingMode mode = SharingMode::kExclusive, int64_t mem = 81920) {
  NodeSpec n;
  n.name = std::move(name);
  n.allocatable = {64000, 512 * 1024};
  for (int i = 0; i < gpus; ++i) n.gpus.push_back(MakeGpu(i, model, mem, mode));
  return n;
}

inline NodeId MustAdd(ClusterState& s, NodeSpec n) {
  Result<NodeId> id = s.AddNode(std::move(n));
  EXPECT_TRUE(id.ok()) << id.status().message();
  return id.ok() ? *id : NodeId();
}

// A pod from the resource names users write.
inline PodSpec MakePod(std::string name, const api::ResourceList& limits) {
  PodSpec p;
  p.name = std::move(name);
  Status s = api::ApplyContainerResources(limits, {}, "resources", &p);
  EXPECT_TRUE(s.ok()) << s.message();
  return p;
}

inline std::unique_ptr<Scheduler> MustScheduler(std::string policy = "bestfit", uint64_t seed = 1,
                                                int pct = 100) {
  SchedulerConfig c;
  c.policy = std::move(policy);
  c.seed = seed;
  c.percentage_of_nodes_to_score = pct;
  auto s = Scheduler::Create(c);
  EXPECT_TRUE(s.ok()) << s.status().message();
  return std::move(s).value();
}

// GPU indices (not positions) of a placement, in order.
inline std::vector<int> GpuIndices(const ClusterState& s, const Placement& p) {
  std::vector<int> out;
  for (const DeviceAssignment& d : p.devices) out.push_back(s.node(p.node).gpus[d.gpu].index);
  return out;
}

}  // namespace tessera::core::testing

#endif  // TESSERA_TESTS_CORE_TEST_CLUSTER_H_
