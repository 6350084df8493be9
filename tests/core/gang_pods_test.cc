// GangPods (a gang held as runs of alike members) and ScheduleGang over it: a gang of many
// members costs about as many placements as there is room for.
#include "core/gang_pods.h"

#include <gtest/gtest.h>

#include "core/scheduler.h"
#include "core/test_cluster.h"
#include "core/workload.h"

namespace tessera::core {
namespace {

using testing::MakeNode;
using testing::MakePod;
using testing::MustAdd;
using testing::MustScheduler;

Workload TwoSets(int32_t workers, int32_t min_workers) {
  Workload w;
  w.name = "ns/train";
  w.pod_sets.push_back({"ps", MakePod("", {{"nvidia.com/gpu", "1"}}), 1, 1});
  w.pod_sets.push_back({"empty", MakePod("", {{"nvidia.com/gpu", "2"}}), 0, 0});
  w.pod_sets.push_back({"worker", MakePod("", {{"nvidia.com/gpu", "4"}}), workers, min_workers});
  return w;
}

TEST(GangPods, RunsNameAndMarkTheirMembersAsExpandPodsDoes) {
  const Workload w = TwoSets(3, 2);
  const GangPods g = GangOf(w);
  ASSERT_EQ(g.size(), 4u);
  ASSERT_EQ(g.num_runs(), 3u);
  const std::vector<PodSpec> expanded = ExpandPods(w);
  ASSERT_EQ(expanded.size(), 4u);
  const char* names[] = {"ns/train/ps-0", "ns/train/worker-0", "ns/train/worker-1",
                         "ns/train/worker-2"};
  for (size_t i = 0; i < g.size(); ++i) {
    EXPECT_EQ(g.Name(i), names[i]);
    EXPECT_EQ(expanded[i].name, names[i]);
    EXPECT_EQ(PlacementSignature(g.pod(i)), PlacementSignature(expanded[i])) << i;
  }
  EXPECT_EQ(g.RunOf(0), 0u);
  EXPECT_EQ(g.RunOf(1), 2u);  // the empty set holds no member
  EXPECT_EQ(g.RunOf(3), 2u);
  EXPECT_TRUE(g.Required(0));
  EXPECT_TRUE(g.Required(2));
  EXPECT_FALSE(g.Required(3));
  EXPECT_EQ(g.run(0).required, 1);
  EXPECT_EQ(g.run(2).required, 2);

  const std::vector<PodSpec> pods = {MakePod("a", {}), MakePod("b", {})};
  const std::vector<uint8_t> required = {0, 1};
  const GangPods each = GangPods::Each(pods, required);
  ASSERT_EQ(each.size(), 2u);
  EXPECT_EQ(each.Name(0), "a");
  EXPECT_EQ(each.Name(1), "b");
  EXPECT_FALSE(each.Required(0));
  EXPECT_TRUE(each.Required(1));
}

// A gang of a million one-GPU members on 8 GPUs, and a launcher of no GPU: it fails once the
// 9th member finds no room. That member stands for the rest of its run, and the launcher, which
// could not make up the gang, is not tried; nothing stays held.
TEST(GangPods, AGangThatCannotFitStopsAtTheFirstMemberWithoutRoom) {
  ClusterState s;
  MustAdd(s, MakeNode("n", 8));
  auto sched = MustScheduler();
  GangPods g;
  g.Add({.pod = MakePod("ns/big/worker", {{"nvidia.com/gpu", "1"}}), .count = 1'000'000});
  g.Add({.pod = MakePod("ns/big/launcher", {}), .count = 1});
  const GangOutcome o = sched->ScheduleGang(s, g);
  EXPECT_FALSE(o.ok);
  EXPECT_TRUE(o.placements.empty());
  EXPECT_NE(o.reason.find("gang needs 1000001 of 1000001 members placed; with 8 placed, the 1 "
                          "not yet tried cannot make up the rest; gang member ns/big/worker-8 "
                          "(9/1000001)"),
            std::string::npos)
      << o.reason;
  EXPECT_EQ(s.allocated_gpu_milli(), 0);
  // Alone, the run's members are all accounted for: the rest fail as the 9th did.
  GangPods alone;
  alone.Add({.pod = MakePod("ns/big/worker", {{"nvidia.com/gpu", "1"}}), .count = 1'000'000});
  const GangOutcome a = sched->ScheduleGang(s, alone);
  EXPECT_FALSE(a.ok);
  EXPECT_NE(a.reason.find("gang needs 1000000 of 1000000 members placed, could place 8; gang "
                          "member ns/big/worker-8 (9/1000000)"),
            std::string::npos)
      << a.reason;
  EXPECT_EQ(s.allocated_gpu_milli(), 0);
}

// With min_member 1 the same gang places what fits: the member that does not fit stands for
// the rest of its run, and the next run is still tried.
TEST(GangPods, AnElasticGangPlacesWhatFitsAndTriesEachRun) {
  ClusterState s;
  MustAdd(s, MakeNode("n", 8));
  auto sched = MustScheduler();
  GangPods g;
  g.Add({.pod = MakePod("big/a", {{"nvidia.com/gpu", "2"}}), .count = 100'000});
  g.Add({.pod = MakePod("big/b", {{"nvidia.com/gpu", "1"}}), .count = 100'000});
  const GangOutcome o = sched->ScheduleGang(s, g, 1);
  ASSERT_TRUE(o.ok) << o.reason;
  ASSERT_EQ(o.placements.size(), 200'000u);
  // Largest first: four 2-GPU members fill the node; none of b's fit.
  for (size_t i = 0; i < 4; ++i) EXPECT_TRUE(o.placements[i].has_value()) << i;
  size_t placed = 0;
  for (const auto& p : o.placements) placed += p.has_value();
  EXPECT_EQ(placed, 4u);
  EXPECT_EQ(s.allocated_gpu_milli(), 8000);
  EXPECT_NE(o.reason.find("gang member big/a-4 (5/200000)"), std::string::npos) << o.reason;
}

// Required members (a run's first `required`) go first across runs, then the largest; a
// required member without room fails the gang at once.
TEST(GangPods, RequiredMembersOfEveryRunGoFirst) {
  ClusterState s;
  MustAdd(s, MakeNode("n", 8));
  auto sched = MustScheduler();
  GangPods g;
  g.Add({.pod = MakePod("j/big", {{"nvidia.com/gpu", "4"}}), .count = 3});
  g.Add({.pod = MakePod("j/small", {{"nvidia.com/gpu", "1"}}), .count = 3, .required = 2});
  const GangOutcome o = sched->ScheduleGang(s, g, 3);
  ASSERT_TRUE(o.ok) << o.reason;
  // small-0 and small-1 (required), then big-0 (largest); big-1 finds 2 GPUs left, so the
  // last small ones take them.
  EXPECT_TRUE(o.placements[3].has_value());
  EXPECT_TRUE(o.placements[4].has_value());
  EXPECT_TRUE(o.placements[0].has_value());
  EXPECT_FALSE(o.placements[1].has_value());
  EXPECT_FALSE(o.placements[2].has_value());
  EXPECT_TRUE(o.placements[5].has_value());
  EXPECT_EQ(s.allocated_gpu_milli(), 7000);

  ClusterState t;
  MustAdd(t, MakeNode("n", 8));
  GangPods h;
  h.Add({.pod = MakePod("j/w", {{"nvidia.com/gpu", "1"}}), .count = 4});
  h.Add({.pod = MakePod("j/ps", {{"nvidia.com/gpu", "16"}}), .count = 1, .required = 1});
  const GangOutcome f = sched->ScheduleGang(t, h, 1);
  EXPECT_FALSE(f.ok);
  EXPECT_NE(f.reason.find("minimum of each of its tasks placed; gang member j/ps-0 (1/5)"),
            std::string::npos)
      << f.reason;
  EXPECT_EQ(t.allocated_gpu_milli(), 0);
}

}  // namespace
}  // namespace tessera::core
