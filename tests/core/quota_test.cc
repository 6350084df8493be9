#include "core/quota.h"

#include <gtest/gtest.h>

#include <optional>
#include <string>
#include <vector>

namespace tessera::core {
namespace {

constexpr int64_t kGpu = 1000;

ResourceGroup GpuGroup(std::string flavor, int64_t nominal,
                       std::optional<int64_t> borrowing = std::nullopt,
                       std::optional<int64_t> lending = std::nullopt) {
  ResourceGroup g;
  g.covered = {QuotaResource::kGpu};
  g.flavors.push_back({std::move(flavor), {{QuotaResource::kGpu, nominal, borrowing, lending}}});
  return g;
}

QueueSpec Queue(std::string name, std::string cohort, ResourceGroup g) {
  QueueSpec q;
  q.name = std::move(name);
  q.cohort = std::move(cohort);
  q.resource_groups = {std::move(g)};
  return q;
}

QuotaCharge Gpus(int flavor, int64_t gpus) {
  QuotaCharge c;
  c.Add(flavor, QuotaResource::kGpu, gpus * kGpu);
  return c;
}

TEST(QuotaTree, BorrowingAndLendingLimits) {
  // Cohort "c": A has nominal 8 with lending limit 2 (6 stay guaranteed to A); B has nominal 4,
  // lends all of it, and may borrow at most 2. The pool is 2 (from A) + 4 (from B) = 6.
  QueueConfig cfg;
  cfg.flavors = {{"h100", {}, {}, {}, {}}};
  cfg.cohorts = {{"c", "", {}, 1000}};
  cfg.queues = {Queue("a", "c", GpuGroup("h100", 8 * kGpu, std::nullopt, 2 * kGpu)),
                Queue("b", "c", GpuGroup("h100", 4 * kGpu, 2 * kGpu))};
  Result<QuotaTree> t = QuotaTree::Build(cfg);
  ASSERT_TRUE(t.ok()) << t.status().message();
  const int a = t->FindQueue("a"), b = t->FindQueue("b");

  struct Step {
    const char* what;
    int queue;
    int64_t add_gpus;
    int64_t want_avail_a, want_avail_b;  // in GPUs, after the step
  };
  const Step steps[] = {
      // Idle: A may use its 6 guaranteed plus the whole pool of 6 = 12. B: its 4 in the pool
      // plus its borrowing limit 2 = 6.
      {"idle", a, 0, 12, 6},
      // A uses 10: 6 guaranteed + 4 from the pool; the pool has 2 left. B may take only those
      // 2 (its own quota is lent out: reclaiming it needs preemption).
      {"A borrows 4", a, 10, 2, 2},
      // A gives back 6 (uses 4, all guaranteed): pool fully idle again.
      {"A shrinks to 4", a, -6, 8, 6},
      // B uses 6 = nominal 4 + borrowing limit 2: B may take nothing more; A keeps its
      // guaranteed 2 left (6 - 4) and the pool's 0 left.
      {"B at its borrowing limit", b, 6, 2, 0},
  };
  for (const Step& s : steps) {
    if (s.add_gpus != 0) {
      QuotaCharge c = Gpus(0, s.add_gpus < 0 ? -s.add_gpus : s.add_gpus);
      t->AddUsage(s.queue, c, s.add_gpus < 0 ? -1 : +1);
    }
    EXPECT_EQ(t->Available(a, 0, QuotaResource::kGpu), s.want_avail_a * kGpu) << s.what;
    EXPECT_EQ(t->Available(b, 0, QuotaResource::kGpu), s.want_avail_b * kGpu) << s.what;
  }
  // B at 6 would borrow with one more GPU and may not (limit 2); the reason says so.
  EXPECT_FALSE(t->Fits(b, Gpus(0, 1)));
  EXPECT_NE(t->Explain(b, Gpus(0, 1)).find("borrowing limit 2 GPUs"), std::string::npos)
      << t->Explain(b, Gpus(0, 1));
  EXPECT_TRUE(t->BorrowingIn(b, 0, QuotaResource::kGpu));
  EXPECT_FALSE(t->BorrowingIn(a, 0, QuotaResource::kGpu));
}

TEST(QuotaTree, HierarchicalCohortsLendThroughTheTree) {
  // root (own quota 4) <- mid (lending limit 2 to root) <- queues x (nominal 4), y (nominal 0).
  // mid's subtree quota is 4 (from x); it lends at most 2 of it to root, so root's pool is
  // 4 + 2 = 6 and queue z directly under root (nominal 0) may take 6 at most... but only 2 of
  // mid's quota: z's availability is root's pool, 6.
  QueueConfig cfg;
  cfg.flavors = {{"f", {}, {}, {}, {}}};
  CohortSpec root{"root", "", {GpuGroup("f", 4 * kGpu)}, 1000};
  CohortSpec mid{"mid", "root", {GpuGroup("f", 0, std::nullopt, 2 * kGpu)}, 1000};
  cfg.cohorts = {root, mid};
  cfg.queues = {Queue("x", "mid", GpuGroup("f", 4 * kGpu)), Queue("y", "mid", GpuGroup("f", 0)),
                Queue("z", "root", GpuGroup("f", 0))};
  Result<QuotaTree> t = QuotaTree::Build(cfg);
  ASSERT_TRUE(t.ok()) << t.status().message();
  const int x = t->FindQueue("x"), y = t->FindQueue("y"), z = t->FindQueue("z");
  // mid: subtree 0 + 4 = 4, guaranteed 4 - 2 = 2 (never leaves mid). root: 4 + (4 - 2) = 6.
  // y (in mid): mid's guaranteed 2 + root's 6 = 8, all of x's quota and root's own.
  EXPECT_EQ(t->Available(x, 0, QuotaResource::kGpu), 8 * kGpu);
  EXPECT_EQ(t->Available(y, 0, QuotaResource::kGpu), 8 * kGpu);
  EXPECT_EQ(t->Available(z, 0, QuotaResource::kGpu), 6 * kGpu);
  // z takes 5: root has 1 left; mid's guaranteed 2 remain for x and y: 3 each.
  t->AddUsage(z, Gpus(0, 5), +1);
  EXPECT_EQ(t->Available(x, 0, QuotaResource::kGpu), 3 * kGpu);
  EXPECT_EQ(t->Available(z, 0, QuotaResource::kGpu), 1 * kGpu);
  EXPECT_NE(t->Explain(z, Gpus(0, 2)).find("cohort root has 1 GPU idle"), std::string::npos)
      << t->Explain(z, Gpus(0, 2));
}

TEST(QuotaTree, DominantResourceShareIsWeighted) {
  // Pool 8 GPUs (a: 4, b: 4). a uses 6: 2 above its quota = 2/8 of the pool = 250 milli.
  // With weight 2, a's share halves to 125.
  QueueConfig cfg;
  cfg.flavors = {{"f", {}, {}, {}, {}}};
  cfg.cohorts = {{"c", "", {}, 1000}};
  cfg.queues = {Queue("a", "c", GpuGroup("f", 4 * kGpu)), Queue("b", "c", GpuGroup("f", 4 * kGpu))};
  cfg.queues[1].fair_weight_milli = 2000;
  Result<QuotaTree> t = QuotaTree::Build(cfg);
  ASSERT_TRUE(t.ok());
  t->AddUsage(0, Gpus(0, 6), +1);
  EXPECT_EQ(t->ShareMilli(0), 250);
  EXPECT_EQ(t->ShareMilli(1), 0);
  QuotaCharge six = Gpus(0, 6);
  EXPECT_EQ(t->ShareMilli(1, &six), 125);
}

TEST(QuotaFormat, ReadableAmounts) {
  EXPECT_EQ(FormatQuota(QuotaResource::kGpu, 2500), "2.5 GPUs");
  EXPECT_EQ(FormatQuota(QuotaResource::kGpu, 1000), "1 GPU");
  EXPECT_EQ(FormatQuota(QuotaResource::kGpu, 143), "0.143 GPUs");
  EXPECT_EQ(FormatQuota(QuotaResource::kCpu, 16000), "16 CPUs");
  EXPECT_EQ(FormatQuota(QuotaResource::kMemory, 65536), "64 GiB");
}

TEST(QueueConfigValidation, ErrorsNameTheField) {
  struct Case {
    const char* what;
    void (*mutate)(QueueConfig&);
    const char* want;
  };
  auto base = [] {
    QueueConfig cfg;
    cfg.flavors = {{"f", {}, {}, {}, {}}};
    cfg.cohorts = {{"c", "", {}, 1000}};
    cfg.queues = {Queue("a", "c", GpuGroup("f", 4 * kGpu))};
    cfg.local_queues = {{"team-a", "main", "a"}};
    return cfg;
  };
  const Case cases[] = {
      {"negative nominal",
       [](QueueConfig& c) { c.queues[0].resource_groups[0].flavors[0].resources[0].nominal = -4; },
       "queues[0] (a).resource_groups[0].flavors[0].resources[0].nominal: must be >= 0, got -4"},
      {"lending above nominal",
       [](QueueConfig& c) {
         c.queues[0].resource_groups[0].flavors[0].resources[0].lending_limit = 5 * kGpu;
       },
       "lending_limit: must be in 0..nominal"},
      {"unknown flavor",
       [](QueueConfig& c) { c.queues[0].resource_groups[0].flavors[0].flavor = "nope"; },
       "unknown resource flavor \"nope\""},
      {"unknown cohort", [](QueueConfig& c) { c.queues[0].cohort = "nope"; },
       "queues[0] (a).cohort: unknown cohort \"nope\""},
      {"cohort cycle",
       [](QueueConfig& c) {
         c.cohorts = {{"x", "y", {}, 1000}, {"y", "x", {}, 1000}};
         c.queues[0].cohort = "x";
       },
       "cohort tree has a cycle"},
      {"duplicate queue", [](QueueConfig& c) { c.queues.push_back(c.queues[0]); },
       "queues[1] (a).name: duplicate queue"},
      {"resource in two groups",
       [](QueueConfig& c) { c.queues[0].resource_groups.push_back(GpuGroup("f", 0)); },
       "resource nvidia.com/gpu is already covered by another group"},
      {"two defaults",
       [](QueueConfig& c) {
         c.priority_classes = {{"p1", 1, {}, true}, {"p2", 2, {}, true}};
       },
       "only one priority class may be the global default"},
      {"negative weight", [](QueueConfig& c) { c.queues[0].fair_weight_milli = -1; },
       "fair_weight: must be in 0..1000000"},
  };
  ASSERT_TRUE(ValidateQueueConfig(base()).ok());
  for (const Case& c : cases) {
    QueueConfig cfg = base();
    c.mutate(cfg);
    Status s = ValidateQueueConfig(cfg);
    EXPECT_FALSE(s.ok()) << c.what;
    EXPECT_NE(s.message().find(c.want), std::string::npos) << c.what << ": " << s.message();
  }
}

}  // namespace
}  // namespace tessera::core
