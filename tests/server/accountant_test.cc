#include "server/accountant.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "api/time.h"

namespace tessera::server {
namespace {

using nlohmann::json;

constexpr int64_t kT0 = 1'800'000'000'000;  // ms
constexpr int64_t kHour = 3'600'000;

StoredJson Stored(json obj) { return {std::make_shared<const json>(std::move(obj)), 1}; }

// A node with one A100 whose last sample reads `utilization`.
StoredJson Node(int64_t utilization) {
  return Stored({{"metadata", {{"name", "n1"}}},
                 {"status",
                  {{"gpus", {{{"index", 0}, {"uuid", "GPU-0"}, {"model", "A100-SXM4-80GB"}}}},
                   {"telemetry", {{{"index", 0}, {"utilizationPct", utilization}}}}}}});
}

// A Job admitted at `admitted` holding GPU-0 of n1 whole; `finished` >= 0: ended then.
StoredJson Job(int64_t admitted, int64_t finished = -1) {
  json status = {{"phase", finished >= 0 ? "Succeeded" : "Admitted"},
                 {"queue", "research"},
                 {"admittedAt", api::FormatTime(admitted)},
                 {"pods",
                  {{{"name", "main-0"},
                    {"node", "n1"},
                    {"devices", {{{"uuid", "GPU-0"}, {"gpuMilli", 1000}}}}}}}};
  if (finished >= 0) status["finishedAt"] = api::FormatTime(finished);
  return Stored({{"metadata", {{"namespace", "team-a"}, {"name", "train"}}}, {"status", status}});
}

class AccountantTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/tessera-acct-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    acct_ = Accountant::Open(store::UsageStore::Open(dir_ + "/usage.db").value()).value();
    AccountingOptions o;
    o.idle_window_ms = kHour;
    acct_->Configure(o);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  Result<std::vector<core::IdlePod>> Observe(int64_t now, std::vector<StoredJson> jobs,
                                             int64_t utilization) {
    const std::vector<StoredJson> nodes = {Node(utilization)};
    return acct_->Observe(now, jobs, nodes, {});
  }
  std::string dir_;
  std::unique_ptr<Accountant> acct_;
};

// A held GPU is charged from admission to the end the agent reports, priced by its model; the
// time it sat below the idle threshold is the idle part, and a pod idle for the window is
// reported.
TEST_F(AccountantTest, AHoldingIsChargedAndItsIdleTimeFound) {
  ASSERT_TRUE(Observe(kT0, {Job(kT0)}, 90).ok());
  auto idle = Observe(kT0 + kHour, {Job(kT0)}, 0);  // idle from here on
  ASSERT_TRUE(idle.ok());
  EXPECT_TRUE(idle->empty());
  idle = Observe(kT0 + 2 * kHour + 1, {Job(kT0)}, 0);
  ASSERT_TRUE(idle.ok());
  ASSERT_EQ(idle->size(), 1u);
  EXPECT_EQ((*idle)[0].pod, "main-0");
  EXPECT_EQ((*idle)[0].gpu_milli, 1000);
  EXPECT_EQ(acct_->idle().size(), 1u);
  ASSERT_TRUE(Observe(kT0 + 3 * kHour, {Job(kT0, kT0 + 3 * kHour)}, 0).ok());

  auto rows = acct_->Usage(core::UsageGroup::kNamespace, kT0, kT0 + 10 * kHour, std::nullopt);
  ASSERT_TRUE(rows.ok());
  ASSERT_EQ(rows->size(), 1u);
  const core::UsageRow& r = (*rows)[0];
  EXPECT_EQ(r.key, "team-a");
  EXPECT_EQ(r.milli_gpu_ms, 3 * 1000 * kHour);
  EXPECT_EQ(r.idle_milli_gpu_ms, 2 * 1000 * kHour);
  EXPECT_EQ(r.cost_hundredths, 3 * 6500) << "three A100-hours at the seeds' price";
  EXPECT_EQ(r.wasted_cost_hundredths, 2 * 6500);
  EXPECT_FALSE(r.unpriced);
  // Another namespace sees nothing of it.
  EXPECT_TRUE(acct_->Usage(core::UsageGroup::kNamespace, kT0, kT0 + 10 * kHour, "team-b")->empty());
}

// The ledger survives a restart: a holding opened before it is closed after it.
TEST_F(AccountantTest, OpenHoldingsSurviveARestart) {
  ASSERT_TRUE(Observe(kT0, {Job(kT0)}, 90).ok());
  acct_.reset();
  acct_ = Accountant::Open(store::UsageStore::Open(dir_ + "/usage.db").value()).value();
  ASSERT_TRUE(Observe(kT0 + kHour, {Job(kT0, kT0 + kHour)}, 90).ok());
  auto rows = acct_->Usage(core::UsageGroup::kJob, kT0, kT0 + 2 * kHour, std::nullopt);
  ASSERT_TRUE(rows.ok());
  ASSERT_EQ(rows->size(), 1u);
  EXPECT_EQ((*rows)[0].key, "team-a/train");
  EXPECT_EQ((*rows)[0].milli_gpu_ms, 1000 * kHour);
}

// Replicas on etcd share one ledger; only the leader writes it. A replica that leads in a new
// term goes on from what the last leader left open: it closes a holding opened before it led
// (here two accountants on one ledger, each with its own term's fence).
TEST_F(AccountantTest, ANewLeaderGoesOnFromTheSegmentsTheLastOneLeftOpen) {
  auto next = Accountant::Open(store::UsageStore::Open(dir_ + "/usage.db").value()).value();
  const std::vector<StoredJson> nodes = {Node(90)};
  const std::vector<StoredJson> held = {Job(kT0)};
  ASSERT_TRUE(acct_->Observe(kT0, held, nodes, {}, store::Fence{"leader", 10}).ok());
  const std::vector<StoredJson> ended = {Job(kT0, kT0 + kHour)};
  ASSERT_TRUE(next->Observe(kT0 + 2 * kHour, ended, nodes, {}, store::Fence{"leader", 20}).ok());
  auto rows = next->Usage(core::UsageGroup::kJob, kT0, kT0 + 5 * kHour, std::nullopt);
  ASSERT_TRUE(rows.ok());
  ASSERT_EQ(rows->size(), 1u);
  EXPECT_EQ((*rows)[0].milli_gpu_ms, 1000 * kHour) << "closed at the Job's end, by the new leader";
  auto open = store::UsageStore::Open(dir_ + "/usage.db").value()->LoadOpen();
  ASSERT_TRUE(open.ok());
  EXPECT_TRUE(open->empty());
}

}  // namespace
}  // namespace tessera::server
