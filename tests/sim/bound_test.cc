#include "sim/bound.h"

#include <algorithm>
#include <functional>
#include <random>

#include <gtest/gtest.h>

#ifndef TESSERA_DATA_DIR
#error "TESSERA_DATA_DIR must name the bundled data directory"
#endif

namespace tessera::sim {
namespace {

core::NodeSpec Node(std::string name, int cards, int64_t cpu_milli, std::string model = "T4") {
  core::NodeSpec n;
  n.name = std::move(name);
  n.allocatable = {cpu_milli, 262144};
  for (int g = 0; g < cards; ++g) {
    core::GpuDevice d;
    d.index = static_cast<uint16_t>(g);
    d.uuid = "GPU-" + n.name + "-" + std::to_string(g);
    d.model = model;
    d.memory_mib = 15360;
    d.sharing.mode = core::SharingMode::kShared;
    n.gpus.push_back(d);
  }
  return n;
}

TracePod Share(int milli, int64_t cpu_milli = 1000) {
  TracePod p;
  p.name = "share";
  p.cpu_milli = cpu_milli;
  p.memory_mib = 1024;
  p.num_gpu = 1;
  p.gpu_milli = milli;
  return p;
}

TracePod Whole(int cards, int64_t cpu_milli = 1000) {
  TracePod p = Share(1000, cpu_milli);
  p.name = "whole";
  p.num_gpu = cards;
  return p;
}

int64_t Bound(const std::vector<core::NodeSpec>& nodes, const std::vector<TracePod>& pods) {
  auto b = AllocationBoundMilli(nodes, pods);
  EXPECT_TRUE(b.ok()) << b.status().message();
  return b.ok() ? *b : -1;
}

// An 810-milli share leaves 190 on its card, where a 470 does not fit: 810 + 190 is the most a
// card holds of these (the plain GPU capacity would allow 1,000 of 810 + 470 + 190 = 1,470).
TEST(Bound, AShareAboveHalfACardKeepsTheRestForSmallShares) {
  EXPECT_EQ(Bound({Node("a", 1, 8000)}, {Share(810), Share(470), Share(190)}), 1000);
}

// Three 470-milli shares on one card: two fit (940); counting thirds of a card proves it.
TEST(Bound, SharesRoundedToFractionsOfACard) {
  EXPECT_EQ(Bound({Node("a", 1, 8000)}, {Share(470), Share(470), Share(470)}), 940);
  EXPECT_EQ(Bound({Node("a", 1, 8000)}, {Share(470), Share(470), Share(60)}), 1000);
}

// Two pods of 6 cores on an 8-core node: only one fits, though their CPU sums to 1.5 nodes.
TEST(Bound, APodOfMoreThanHalfANodesCpuLeavesNoRoomForAnother) {
  EXPECT_EQ(Bound({Node("a", 2, 8000)}, {Whole(1, 6000), Whole(1, 6000)}), 1000);
}

// Two 3-card pods on a 4-card node: one fits.
TEST(Bound, APodOfMoreThanHalfANodesCardsLeavesNoRoomForAnother) {
  EXPECT_EQ(Bound({Node("a", 4, 64000)}, {Whole(3), Whole(3)}), 3000);
}

TEST(Bound, PinnedModelsAndPodsTooBigForAnyNodeCountNothing) {
  TracePod pinned = Whole(1);
  pinned.gpu_models = {"V100M32"};
  EXPECT_EQ(Bound({Node("a", 2, 8000, "T4")}, {pinned, Whole(4)}), 0);
  EXPECT_EQ(Bound({Node("a", 2, 8000, "T4"), Node("b", 1, 8000, "V100M32")}, {pinned}), 1000);
  EXPECT_EQ(Bound({Node("a", 1, 8000)}, {}), 0);
}

// The most GPU milli any placement of `pods` allocates, by trying every placement: each pod goes
// nowhere or onto one node, its cards onto that node's cards with room (whole cards onto free
// ones), within the node's CPU.
int64_t BruteForce(const std::vector<core::NodeSpec>& nodes, const std::vector<TracePod>& pods) {
  std::vector<std::vector<int64_t>> free(nodes.size());
  std::vector<int64_t> cpu(nodes.size());
  for (size_t n = 0; n < nodes.size(); ++n) {
    free[n].assign(nodes[n].gpus.size(), 1000);
    cpu[n] = nodes[n].allocatable.cpu_milli;
  }
  int64_t best = 0;
  std::function<void(size_t, int64_t)> go = [&](size_t i, int64_t got) {
    best = std::max(best, got);
    if (i == pods.size()) return;
    go(i + 1, got);  // not placed
    const TracePod& p = pods[i];
    for (size_t n = 0; n < nodes.size(); ++n) {
      if (cpu[n] < p.cpu_milli) continue;
      cpu[n] -= p.cpu_milli;
      if (p.gpu_milli < 1000) {
        for (size_t g = 0; g < free[n].size(); ++g) {
          if (free[n][g] < p.gpu_milli) continue;
          free[n][g] -= p.gpu_milli;
          go(i + 1, got + p.gpu_milli);
          free[n][g] += p.gpu_milli;
        }
      } else {
        std::vector<size_t> idle;
        for (size_t g = 0; g < free[n].size(); ++g) {
          if (free[n][g] == 1000) idle.push_back(g);
        }
        if (static_cast<int>(idle.size()) >= p.num_gpu) {
          for (int k = 0; k < p.num_gpu; ++k) free[n][idle[k]] = 0;
          go(i + 1, got + p.GpuDemandMilli());
          for (int k = 0; k < p.num_gpu; ++k) free[n][idle[k]] = 1000;
        }
      }
      cpu[n] += p.cpu_milli;
    }
  };
  go(0, 0);
  return best;
}

// The bound is never below the best placement, on random small clusters and pod sets with the
// trace's share sizes; and it is exact on most of them.
TEST(Bound, NeverBelowTheBestPlacementOfRandomSmallInstances) {
  std::mt19937 rng(7);
  const int shares[] = {50, 110, 160, 190, 230, 250, 300, 330, 470, 500, 650, 810};
  int exact = 0;
  constexpr int kRuns = 200;
  for (int run = 0; run < kRuns; ++run) {
    std::vector<core::NodeSpec> nodes;
    const int n = 1 + static_cast<int>(rng() % 2);
    for (int i = 0; i < n; ++i) {
      nodes.push_back(Node("n" + std::to_string(i), 1 + static_cast<int>(rng() % 2),
                           2000 + 2000 * static_cast<int64_t>(rng() % 3)));
    }
    std::vector<TracePod> pods;
    const int m = 2 + static_cast<int>(rng() % 5);
    for (int i = 0; i < m; ++i) {
      const int64_t cpu = 500 + 500 * static_cast<int64_t>(rng() % 6);
      pods.push_back(rng() % 4 == 0 ? Whole(1 + static_cast<int>(rng() % 2), cpu)
                                    : Share(shares[rng() % std::size(shares)], cpu));
    }
    const int64_t best = BruteForce(nodes, pods);
    const int64_t bound = Bound(nodes, pods);
    ASSERT_GE(bound, best) << "run " << run;
    exact += bound == best;
  }
  EXPECT_GT(exact, kRuns / 2);
}

// On the default trace (seed 42): the bound at 100% arrived demand sits above what FGD and
// fragpack reach there and below the whole capacity; at 130% the arrived pods can fill it.
TEST(Bound, OnTheDefaultTraceItIsAboveThePoliciesAndBelowTheCapacity) {
  const std::string data = std::string(TESSERA_DATA_DIR) + "/traces/alibaba-gpu-v2023/";
  auto nodes = LoadNodes(data + "openb_node_list_gpu_node.csv");
  auto pods = LoadPods(data + "openb_pod_list_default.csv");
  ASSERT_TRUE(nodes.ok() && pods.ok());
  Trace t{"default", std::move(*nodes), std::move(*pods)};
  const int points[] = {100, 130};
  auto bound = ArrivalBoundPct(t, 42, 1.3, points);
  ASSERT_TRUE(bound.ok()) << bound.status().message();
  const auto workload = TraceWorkload(t.pods);
  for (const char* policy : {"fgd", "fragpack"}) {
    ArrivalConfig c;
    c.policy = policy;
    auto run = RunArrival(t, workload, c);
    ASSERT_TRUE(run.ok());
    EXPECT_GT((*bound)[0], run->alloc_pct[100]) << policy;
    EXPECT_GT((*bound)[1], run->alloc_pct[130]) << policy;
  }
  EXPECT_LT((*bound)[0], 99.0);
  EXPECT_GT((*bound)[0], 95.0);
}

}  // namespace
}  // namespace tessera::sim
