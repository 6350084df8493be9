// The write stage of a scheduling cycle on its own: decisions recorded in the Jobs' statuses,
// and the waiting Jobs' reasons within their refresh interval and budget.
#include "server/cycle_record.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "server/cycle_fixture.h"

namespace tessera::server {
namespace {

using nlohmann::json;

TEST(RefreshBudget, FullAtFirstThenRefilledByTheSecond) {
  RefreshBudget budget(3);
  budget.Refill(10'000);
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(budget.Spend()) << i;
  EXPECT_FALSE(budget.Spend());
  budget.Refill(10'500);  // half a second: one and a half rewrites
  EXPECT_TRUE(budget.Spend());
  EXPECT_FALSE(budget.Spend());
  budget.Refill(100'000);  // never more than a second's worth
  for (int i = 0; i < 3; ++i) EXPECT_TRUE(budget.Spend()) << i;
  EXPECT_FALSE(budget.Spend());
}

class CycleRecordTest : public CycleStageTest {};

TEST_F(CycleRecordTest, AdmissionBindsExactDevicesAndAGangMeetsAtItsFirstPod) {
  ApplyNode("n1", 2, "10.0.0.1");
  Apply(JobYaml("gang", 2, 1));
  Apply(JobYaml("waits", 1, 1));
  CycleReader reader(*plane_, 0);
  CycleSnapshot snap = Read(reader);
  const Decision d = Decide(snap);
  RefreshBudget budget(50);
  budget.Refill(now_);
  Recorded recorded;
  {
    auto writes = Writes();
    DecisionWriter record(snap, *writes, now_, {}, budget);
    recorded = record.Decisions(d.result);
    record.Statuses(d.result, d.inactive);
  }
  EXPECT_EQ(recorded.admitted, 1);
  EXPECT_EQ(recorded.preempted, 0);
  ASSERT_EQ(recorded.waits.size(), 1u);
  EXPECT_EQ(recorded.waits[0].first, kUnqueued);
  const json gang = Job("gang")["status"];
  ASSERT_EQ(gang["phase"], "Admitted") << gang.dump();
  ASSERT_EQ(gang["pods"].size(), 2u);
  EXPECT_EQ(gang["pods"][0]["devices"][0]["uuid"].get<std::string>() +
                gang["pods"][1]["devices"][0]["uuid"].get<std::string>(),
            "GPU-0GPU-1");
  EXPECT_EQ(gang["rendezvous"], json::parse(R"({"masterNode": "n1", "masterAddr": "10.0.0.1",
      "masterPort": 29500, "worldSize": 2})"));
  EXPECT_EQ(gang["pods"][1]["port"], 29501);
  const json waits = Job("waits")["status"];
  EXPECT_EQ(waits["phase"], "Pending");
  EXPECT_FALSE(waits["message"].get<std::string>().empty());
  EXPECT_EQ(Events("gang").back().rfind("Scheduled: Scheduled ", 0), 0u) << Events("gang").back();
}

TEST_F(CycleRecordTest, ChangedReasonWaitsForTheRefreshIntervalAndTheBudget) {
  ApplyNode("n1", 1);
  Apply(JobYaml("waiting", 1, 1));
  CycleReader reader(*plane_, 0);
  RefreshBudget budget(1);
  budget.Refill(now_);
  auto set = [&](const std::string& reason) {
    CycleSnapshot snap = Read(reader);
    auto writes = Writes();
    DecisionWriter(snap, *writes, now_, {.pending_refresh_ms = 5'000}, budget)
        .SetPending(snap.pending_jobs.at(0), reason);
  };
  set("first reason");  // its first reason is written at once
  EXPECT_EQ(Job("waiting")["status"]["message"], "first reason");
  now_ += 1000;
  set("second reason");  // within the interval: kept
  EXPECT_EQ(Job("waiting")["status"]["message"], "first reason");
  now_ += 5000;
  set("second reason");  // after it, with the budget's one rewrite
  EXPECT_EQ(Job("waiting")["status"]["message"], "second reason");
  now_ += 6000;
  set("third reason");  // the budget is spent (not refilled here)
  EXPECT_EQ(Job("waiting")["status"]["message"], "second reason");
  budget.Refill(now_);
  set("third reason");
  EXPECT_EQ(Job("waiting")["status"]["message"], "third reason");
}

TEST_F(CycleRecordTest, InactiveQueueSaysWhyAndItsWorkWaitsWithTheReason) {
  ApplyNode("n1", 1);
  ApplyKueueQueue(1);
  Apply(JobYaml("queued", 1, 1, "main"));
  CycleReader reader(*plane_, 0);
  CycleSnapshot snap = Read(reader);
  snap.cfg.queues[0].cohort = "no-such-cohort";  // as if written so
  const Decision d = Decide(snap);
  ASSERT_TRUE(d.inactive.contains("cq"));
  RefreshBudget budget(50);
  budget.Refill(now_);
  {
    auto writes = Writes();
    DecisionWriter record(snap, *writes, now_, {}, budget);
    record.Decisions(d.result);
    record.Statuses(d.result, d.inactive);
  }
  const json queue = Get("/apis/tessera.io/v1/queues/cq")["status"];
  EXPECT_EQ(queue["active"], false);
  EXPECT_NE(queue["message"].get<std::string>().find("unknown cohort"), std::string::npos);
  const std::string message = Job("queued")["status"]["message"];
  EXPECT_EQ(message.rfind("queue cq is inactive: ", 0), 0u) << message;
}

}  // namespace
}  // namespace tessera::server
