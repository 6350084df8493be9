// A random history of placements run through two schedulers that must place alike (with and
// without reused results, with and without state classes).
#ifndef TESSERA_TESTS_CORE_SAME_PLACEMENTS_H_
#define TESSERA_TESTS_CORE_SAME_PLACEMENTS_H_

#include <gtest/gtest.h>

#include <functional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "core/cluster_state.h"
#include "core/mig.h"
#include "core/scheduler.h"
#include "core/test_cluster.h"

namespace tessera::core::testing {

inline NodeSpec RandomNode(std::mt19937_64& rng, int i) {
  NodeSpec n;
  n.name = "node-" + std::to_string(i);
  n.allocatable = {static_cast<int64_t>(8000 + 8000 * (rng() % 4)), 256 * 1024};
  n.labels = {{"pool", rng() % 2 ? "a" : "b"}};
  if (rng() % 6 == 0) n.taints.push_back({"dedicated", "x", TaintEffect::kNoSchedule});
  if (rng() % 6 == 0) n.taints.push_back({"spot", "", TaintEffect::kPreferNoSchedule});
  const int kind = static_cast<int>(rng() % 4);
  const std::string model = rng() % 2 ? "A100-40GB" : "H100-80GB";
  const int64_t mem = model == "A100-40GB" ? 40960 : 81920;
  const int cards = 1 + static_cast<int>(rng() % 8);
  for (int g = 0; g < cards; ++g) {
    SharingMode mode = kind == 0   ? SharingMode::kExclusive
                       : kind == 1 ? SharingMode::kShared
                       : kind == 2 ? (g % 2 ? SharingMode::kShared : SharingMode::kExclusive)
                                   : (g % 3 == 0 ? SharingMode::kTimeSlice : SharingMode::kShared);
    if (kind == 3 && g == 1 && model == "A100-40GB") mode = SharingMode::kMig;
    GpuDevice d = MakeGpu(g, model, mem, mode, g / 4, g < cards / 2 ? 0 : 1);
    if (mode == SharingMode::kMig) {
      d.sharing.mig = PlaceMigLayout(*FindMigGeometry(model),
                                     std::vector<std::pair<std::string, int>>{{"1g.5gb", 7}})
                          .value();
    }
    n.gpus.push_back(d);
  }
  return n;
}

// A small catalogue of pod shapes, so that signatures repeat as in a real workload.
inline PodSpec RandomPod(std::mt19937_64& rng, int i) {
  PodSpec p;
  p.name = "pod-" + std::to_string(i);
  const int shape = static_cast<int>(rng() % 10);
  p.requests = {static_cast<int64_t>(1000 * (1 + shape % 4)), 4096};
  switch (shape) {
    case 0:
      break;  // CPU only
    case 1:
    case 2:
      p.gpu = {GpuRequestKind::kShare, 1, shape == 1 ? 250 : 500, 0, ""};
      break;
    case 3:
      p.gpu = {GpuRequestKind::kShare, 2, 300, 8192, ""};
      break;
    case 4:
    case 5:
      p.gpu = {GpuRequestKind::kWhole, shape == 4 ? 1 : 2, 0, 0, ""};
      break;
    case 6:
      p.gpu = {GpuRequestKind::kMig, 1, 0, 0, "1g.5gb"};
      break;
    case 7:
      p.gpu = {GpuRequestKind::kReplica, 1, 0, 0, ""};
      break;
    case 8:
      p.gpu = {GpuRequestKind::kShare, 1, 500, 0, ""};
      p.gpu_models = {"A100-40GB"};
      p.node_selector = {{"pool", "a"}};
      break;
    case 9:
      p.gpu = {GpuRequestKind::kWhole, 1, 0, 0, ""};
      p.tolerations = {{"dedicated", TolerationOp::kExists, ""}};
      p.preferred_terms = {{10, {{{"pool", SelectorOp::kIn, {"b"}}}}}};
      break;
  }
  return p;
}

inline void ExpectSameOutcome(const PlaceOutcome& with, const PlaceOutcome& without, int step) {
  ASSERT_EQ(with.ok, without.ok) << "step " << step << ": " << with.reason << " / "
                                 << without.reason;
  EXPECT_EQ(with.placement, without.placement) << "step " << step;
  EXPECT_EQ(with.reason, without.reason) << "step " << step;
  EXPECT_EQ(with.feasible_nodes, without.feasible_nodes) << "step " << step;
}

// Drives two schedulers (configs `a` and `b`, which must place alike) through the same long
// random history of placements, releases, cordons, GPU failures, relabelling and gangs on two
// copies of one cluster of 40 nodes made by `make_node`, and expects every outcome to be the
// same. With `name_hosts`, one pod in ten names a node by its kubernetes.io/hostname label.
inline void ExpectSamePlacements(const SchedulerConfig& a, const SchedulerConfig& b, uint64_t seed,
                                 const std::function<NodeSpec(std::mt19937_64&, int)>& make_node,
                                 bool name_hosts = false) {
  std::mt19937_64 rng(seed);
  ClusterState with_state;
  for (int i = 0; i < 40; ++i) MustAdd(with_state, make_node(rng, i));
  ClusterState without_state = with_state;
  auto with = Scheduler::Create(a);
  auto without = Scheduler::Create(b);
  auto random_pod = [&](int step) {
    PodSpec pod = RandomPod(rng, step);
    if (name_hosts && rng() % 10 == 0) {
      pod.node_selector[std::string(kHostnameLabel)] =
          with_state.node(NodeId(static_cast<uint32_t>(rng() % with_state.size()))).name;
    }
    return pod;
  };
  ASSERT_TRUE(with.ok() && without.ok());
  std::vector<std::pair<PodSpec, Placement>> running;
  int placed = 0;
  for (int step = 0; step < 1500; ++step) {
    const int op = static_cast<int>(rng() % 100);
    const NodeId node(static_cast<uint32_t>(rng() % with_state.size()));
    if (op < 60) {
      const PodSpec pod = random_pod(step);
      PlaceOutcome a = (*with)->Schedule(with_state, pod);
      PlaceOutcome b = (*without)->Schedule(without_state, pod);
      ExpectSameOutcome(a, b, step);
      if (a.ok && b.ok) running.emplace_back(pod, a.placement);
      placed += a.ok;
    } else if (op < 80 && !running.empty()) {
      const size_t k = rng() % running.size();
      ASSERT_TRUE((*with)->Unreserve(with_state, running[k].first, running[k].second).ok());
      ASSERT_TRUE((*without)->Unreserve(without_state, running[k].first, running[k].second).ok());
      running.erase(running.begin() + static_cast<std::ptrdiff_t>(k));
    } else if (op < 84) {
      const bool cordon = !with_state.node(node).unschedulable;
      ASSERT_TRUE(with_state.SetUnschedulable(node, cordon).ok());
      ASSERT_TRUE(without_state.SetUnschedulable(node, cordon).ok());
    } else if (op < 88 && !with_state.node(node).gpus.empty()) {
      const int gpu = static_cast<int>(rng() % with_state.node(node).gpus.size());
      const GpuHealth h = with_state.node(node).gpus[gpu].health == GpuHealth::kHealthy
                              ? GpuHealth::kUnhealthy
                              : GpuHealth::kHealthy;
      ASSERT_TRUE(with_state.SetGpuHealth(node, gpu, h).ok());
      ASSERT_TRUE(without_state.SetGpuHealth(node, gpu, h).ok());
    } else if (op < 91) {
      Labels labels = with_state.labels(node);
      labels["pool"] = rng() % 2 ? "a" : "b";
      ASSERT_TRUE(with_state.SetLabels(node, labels).ok());
      ASSERT_TRUE(without_state.SetLabels(node, labels).ok());
    } else if (op < 95) {
      PodSpec member = random_pod(step);
      std::vector<PodSpec> gang = {member, member, member};
      GangOutcome a = (*with)->ScheduleGang(with_state, gang);
      GangOutcome b = (*without)->ScheduleGang(without_state, gang);
      ASSERT_EQ(a.ok, b.ok) << "step " << step;
      EXPECT_EQ(a.placements, b.placements) << "step " << step;
      for (size_t i = 0; a.ok && i < gang.size(); ++i) {
        if (a.placements[i]) running.emplace_back(gang[i], *a.placements[i]);
      }
    } else {
      const PodSpec pod = random_pod(step);
      ExpectSameOutcome((*with)->Place(with_state, pod), (*without)->Place(without_state, pod),
                        step);
    }
    if (::testing::Test::HasFatalFailure()) return;
  }
  // The history keeps the cluster busy without filling it: most pods are placed.
  EXPECT_GT(placed, 300);
  EXPECT_FALSE(running.empty());
}

}  // namespace tessera::core::testing

#endif  // TESSERA_TESTS_CORE_SAME_PLACEMENTS_H_
