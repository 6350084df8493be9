// The decide stage of a scheduling cycle on its own: the configuration repaired, then the core's
// decisions over a snapshot.
#include "server/cycle_decide.h"

#include <gtest/gtest.h>

#include "server/cycle_fixture.h"

namespace tessera::server {
namespace {

core::QueueSpec Queue(const std::string& name, const std::string& cohort = "") {
  core::QueueSpec q;
  q.name = name;
  q.cohort = cohort;
  return q;
}

TEST(DropInvalid, BrokenQueueIsInactiveAndTheRestStays) {
  core::QueueConfig cfg;
  cfg.queues = {Queue("good"), Queue("orphan", "no-such-cohort")};
  cfg.local_queues.push_back({"default", "main", "good"});
  cfg.local_queues.push_back({"default", "main", "orphan"});  // a duplicate: dropped
  std::map<std::string, std::string> inactive;
  std::vector<std::string> problems;
  ASSERT_TRUE(DropInvalid(&cfg, &inactive, &problems).ok());
  ASSERT_EQ(cfg.queues.size(), 1u);
  EXPECT_EQ(cfg.queues[0].name, "good");
  ASSERT_EQ(inactive.size(), 1u);
  EXPECT_NE(inactive["orphan"].find("unknown cohort"), std::string::npos) << inactive["orphan"];
  ASSERT_EQ(cfg.local_queues.size(), 1u);
  EXPECT_EQ(cfg.local_queues[0].queue, "good");
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0].rfind("ignored: local_queues[1]", 0), 0u) << problems[0];
}

class CycleDecideTest : public CycleStageTest {};

TEST_F(CycleDecideTest, AdmitsWhatFitsAndSaysWhyTheRestWaits) {
  ApplyNode("n1", 2);
  ApplyKueueQueue(2);
  Apply(JobYaml("first", 1, 2, "main"));
  Apply(JobYaml("second", 1, 1, "main"));
  CycleReader reader(*plane_, 0);
  CycleSnapshot snap = Read(reader);
  ASSERT_EQ(snap.pending.size(), 2u);
  const Decision d = Decide(snap);
  EXPECT_TRUE(d.config_error.empty());
  EXPECT_TRUE(d.inactive.empty());
  ASSERT_EQ(d.result.admissions.size(), 1u);
  const size_t admitted = d.result.admissions[0].pending_index;
  EXPECT_EQ(snap.jobs[snap.pending_jobs[admitted]].obj()["metadata"]["name"], "first");
  ASSERT_EQ(d.result.pending_reasons.size(), 2u);
  EXPECT_FALSE(d.result.pending_reasons[1 - admitted].empty());
  // The snapshot's state is the cluster as read: the decision does not place into it.
  EXPECT_EQ(core::FragmentationOf(snap.state).free_milli, 2000);
}

TEST_F(CycleDecideTest, QueueWithAnUnknownCohortIsLeftOutAndNamed) {
  ApplyNode("n1", 1);
  CycleReader reader(*plane_, 0);
  CycleSnapshot snap = Read(reader);
  snap.cfg.queues.insert(snap.cfg.queues.begin(), Queue("orphan", "no-such-cohort"));
  const Decision d = Decide(snap);
  EXPECT_TRUE(d.config_error.empty());
  ASSERT_TRUE(d.inactive.contains("orphan"));
  EXPECT_EQ(snap.cfg.queues.size(), 1u);  // the built-in queue stays
}

}  // namespace
}  // namespace tessera::server
