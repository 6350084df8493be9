#include "core/accounting.h"

#include <gtest/gtest.h>

namespace tessera::core {
namespace {

constexpr int64_t kHour = 3'600'000;
constexpr int64_t kT0 = 1'800'000'000'000;

HeldDevice Held(std::string key, std::string ns, std::string job, int64_t milli,
                int64_t since = kT0, bool idle = false, std::string model = "A100-80GB") {
  HeldDevice h;
  h.key = std::move(key);
  h.ns = std::move(ns);
  h.queue = "q-" + h.ns;
  h.job = std::move(job);
  h.pod = "worker-0";
  h.model = std::move(model);
  h.gpu_milli = milli;
  h.since_ms = since;
  h.idle = idle;
  return h;
}

// A ledger in memory: applies each update as a store would.
struct Ledger {
  std::vector<UsageSegment> all;
  int64_t next_id = 1;
  std::vector<UsageSegment> Open() const {
    std::vector<UsageSegment> out;
    for (const UsageSegment& s : all) {
      if (s.open()) out.push_back(s);
    }
    return out;
  }
  void Observe(int64_t now, const std::vector<HeldDevice>& held, const EndedHoldings& ended = {}) {
    const std::vector<UsageSegment> open = Open();
    LedgerUpdate u = Reconcile(open, held, ended, now);
    for (const auto& [i, end] : u.closed) {
      for (UsageSegment& s : all) {
        if (s.id == open[i].id) s.end_ms = end;
      }
    }
    for (UsageSegment& s : u.opened) {
      s.id = next_id++;
      all.push_back(s);
    }
  }
};

TEST(Accounting, TwoHalfSharesForTwoHoursAreOneGpuHourEach) {
  Ledger l;
  const std::vector<HeldDevice> held = {Held("a", "team-a", "ja", 500),
                                        Held("b", "team-b", "jb", 500)};
  l.Observe(kT0, held);
  l.Observe(kT0 + kHour, held);  // nothing changes while held
  EXPECT_EQ(l.all.size(), 2u);
  l.Observe(kT0 + 2 * kHour, {});
  const auto rows =
      SummarizeUsage(l.all, UsageGroup::kNamespace, 0, kT0 + 10 * kHour, {{"A100", 6500}});
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].key, "team-a");
  EXPECT_EQ(rows[0].milli_gpu_ms, 1000 * kHour);
  EXPECT_DOUBLE_EQ(rows[0].gpu_hours(), 1.0);
  EXPECT_EQ(rows[0].cost_hundredths, 6500);  // 1 GPU-hour of A100 at 65.00
  EXPECT_EQ(rows[1].key, "team-b");
  EXPECT_DOUBLE_EQ(rows[1].gpu_hours(), 1.0);
  EXPECT_EQ(rows[1].idle_milli_gpu_ms, 0);
}

TEST(Accounting, HoldingStartsAtAdmissionAndEndsWhenTheJobFinished) {
  Ledger l;
  // Observed 10 minutes after its admission; finished 90 minutes after it, seen 2 hours after.
  l.Observe(kT0 + 10 * 60'000, {Held("a", "ns", "j", 1000, kT0)});
  l.Observe(kT0 + 2 * kHour, {}, {{"a", kT0 + 90 * 60'000}});
  ASSERT_EQ(l.all.size(), 1u);
  EXPECT_EQ(l.all[0].start_ms, kT0);
  EXPECT_EQ(l.all[0].end_ms, kT0 + 90 * 60'000);
  // A window cuts segments: the last 30 minutes of the holding.
  const auto rows = SummarizeUsage(l.all, UsageGroup::kJob, kT0 + kHour, kT0 + 5 * kHour, {});
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].key, "ns/j");
  EXPECT_DOUBLE_EQ(rows[0].gpu_hours(), 0.5);
  EXPECT_TRUE(rows[0].unpriced);  // no price table
}

TEST(Accounting, IdleTimeIsWastedAndMakesAnIdlePodAfterTheWindow) {
  Ledger l;
  const int64_t window = 30 * 60'000;
  l.Observe(kT0, {Held("a", "ns", "j", 1000)});
  l.Observe(kT0 + kHour, {Held("a", "ns", "j", 1000, kT0, /*idle=*/true)});
  EXPECT_TRUE(IdlePods(l.Open(), kT0 + kHour + window - 1, window).empty());
  const auto idle = IdlePods(l.Open(), kT0 + kHour + window, window);
  ASSERT_EQ(idle.size(), 1u);
  EXPECT_EQ(idle[0].job, "j");
  EXPECT_EQ(idle[0].pod, "worker-0");
  EXPECT_EQ(idle[0].idle_since_ms, kT0 + kHour);
  EXPECT_EQ(idle[0].gpu_milli, 1000);
  // Busy again after 45 idle minutes; released an hour later.
  l.Observe(kT0 + kHour + 45 * 60'000, {Held("a", "ns", "j", 1000)});
  EXPECT_TRUE(IdlePods(l.Open(), kT0 + 3 * kHour, window).empty());
  l.Observe(kT0 + 3 * kHour, {});
  const auto rows = SummarizeUsage(l.all, UsageGroup::kQueue, 0, kT0 + 4 * kHour, {{"A100", 6500}});
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].key, "q-ns");
  EXPECT_DOUBLE_EQ(rows[0].gpu_hours(), 3.0);
  EXPECT_DOUBLE_EQ(rows[0].idle_gpu_hours(), 0.75);
  EXPECT_EQ(rows[0].cost_hundredths, 3 * 6500);
  EXPECT_EQ(rows[0].wasted_cost_hundredths, 4875);  // 0.75 h x 65.00
}

TEST(Accounting, APodIsIdleOnlyWhenAllItsGpusAre) {
  Ledger l;
  HeldDevice a = Held("a", "ns", "j", 1000, kT0, true);
  HeldDevice b = Held("b", "ns", "j", 1000, kT0, false);
  l.Observe(kT0, {a, b});
  EXPECT_TRUE(IdlePods(l.Open(), kT0 + 10 * kHour, 0).empty());
  b.idle = true;
  l.Observe(kT0 + kHour, {a, b});
  const auto idle = IdlePods(l.Open(), kT0 + 10 * kHour, 0);
  ASSERT_EQ(idle.size(), 1u);
  EXPECT_EQ(idle[0].idle_since_ms, kT0 + kHour);  // since the later one went idle
  EXPECT_EQ(idle[0].gpu_milli, 2000);
}

TEST(Accounting, ANewAdmissionIsANewHoldingAndReleaseClosesItsIdleSegment) {
  Ledger l;
  l.Observe(kT0, {Held("j@1/a", "ns", "j", 250, kT0, true)});
  l.Observe(kT0 + kHour, {Held("j@2/a", "ns", "j", 250, kT0 + kHour)});
  for (const UsageSegment& s : l.all) {
    if (s.key == "j@1/a") {
      EXPECT_EQ(s.end_ms, kT0 + kHour) << static_cast<int>(s.kind);
    }
  }
  EXPECT_EQ(l.Open().size(), 1u);
  const auto rows = SummarizeUsage(l.all, UsageGroup::kJob, 0, kT0 + 2 * kHour, {});
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_DOUBLE_EQ(rows[0].gpu_hours(), 0.5);  // a quarter GPU for two hours
  EXPECT_DOUBLE_EQ(rows[0].idle_gpu_hours(), 0.25);
}

TEST(Accounting, PricesMatchTheLongestModelPrefix) {
  const PriceTable p = {{"A10", 1800}, {"A100", 6500}, {"T4", 850}};
  EXPECT_EQ(PricePerHour(p, "A100-SXM4-80GB"), 6500);
  EXPECT_EQ(PricePerHour(p, "A10"), 1800);
  EXPECT_EQ(PricePerHour(p, "A10G"), 1800);
  EXPECT_EQ(PricePerHour(p, "T4"), 850);
  EXPECT_EQ(PricePerHour(p, "H100-80GB"), -1);
}

}  // namespace
}  // namespace tessera::core
