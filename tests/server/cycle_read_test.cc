// The read stage of a scheduling cycle on its own: the snapshot of nodes, queues and Jobs, and
// what reading finds due.
#include "server/cycle_read.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "server/cycle_fixture.h"

namespace tessera::server {
namespace {

using nlohmann::json;

class CycleReadTest : public CycleStageTest {};

TEST_F(CycleReadTest, SnapshotHoldsTheReadyNodesTheQueuesAndThePendingWork) {
  ApplyNode("n1", 2);
  ApplyKueueQueue(4);
  Apply(JobYaml("queued", 1, 1, "main"));
  Apply(JobYaml("plain", 2, 1));
  CycleReader reader(*plane_, 0);
  CycleSnapshot snap = Read(reader);
  ASSERT_EQ(snap.state.size(), 1u);
  EXPECT_EQ(snap.state.node(core::NodeId(0)).gpus.size(), 2u);
  ASSERT_EQ(snap.jobs.size(), 2u);
  ASSERT_EQ(snap.views.size(), 2u);
  ASSERT_EQ(snap.pending.size(), 2u);
  EXPECT_TRUE(snap.running.empty());
  // The queue written, and the built-in one for work naming none, with a local queue in the
  // namespace that uses it.
  std::vector<std::string> queues;
  for (const core::QueueSpec& q : snap.cfg.queues) queues.push_back(q.name);
  EXPECT_EQ(queues, (std::vector<std::string>{"cq", kUnqueued}));
  const auto unqueued =
      std::find_if(snap.cfg.local_queues.begin(), snap.cfg.local_queues.end(),
                   [](const core::LocalQueueSpec& l) { return l.queue == kUnqueued; });
  ASSERT_NE(unqueued, snap.cfg.local_queues.end());
  EXPECT_EQ(unqueued->namespace_name, "default");
  for (size_t i = 0; i < snap.pending.size(); ++i) {
    const json& obj = snap.jobs[snap.pending_jobs[i]].obj();
    const std::string name = obj["metadata"]["name"];
    EXPECT_EQ(snap.pending[i].local_queue, name == "queued" ? "main" : kUnqueued) << name;
    EXPECT_EQ(snap.pending[i].pod_sets[0].count, name == "queued" ? 1 : 2) << name;
  }
  EXPECT_FALSE(snap.follow_up);
}

TEST_F(CycleReadTest, NodeWithoutRecentHeartbeatTakesNoWorkAndSaysWhy) {
  Apply(OneGpuNode("stale").dump());
  ApplyNode("fresh", 1);  // declared by hand: no heartbeat, always ready
  CycleReader reader(*plane_, 40'000);
  CycleSnapshot snap = Read(reader);
  ASSERT_EQ(snap.state.size(), 1u);
  EXPECT_EQ(snap.state.node(core::NodeId(0)).name, "fresh");
  ASSERT_TRUE(snap.not_ready.contains("stale"));
  EXPECT_NE(snap.not_ready["stale"].find("NotReady: no heartbeat since"), std::string::npos);
  EXPECT_EQ(snap.nodes.size(), 2u);  // the accountant still reads both
  // A grace period of 0: every node is ready.
  CycleReader lenient(*plane_, 0);
  EXPECT_EQ(Read(lenient).state.size(), 2u);
}

TEST_F(CycleReadTest, HeldBackJobsAreNotPendingAndSayWhy) {
  ApplyNode("n1", 1);
  Apply(JobYaml("paused", 1, 1, "", "  suspend: true\n"));
  Apply(JobYaml("gated", 1, 1, "", "  schedulingGates: [example.com/wait]\n"));
  CycleReader reader(*plane_, 0);
  CycleSnapshot snap = Read(reader);
  EXPECT_TRUE(snap.pending.empty());
  ASSERT_EQ(snap.suspended.size(), 1u);
  EXPECT_EQ(snap.jobs[snap.suspended[0]].obj()["metadata"]["name"], "paused");
  ASSERT_EQ(snap.gated.size(), 1u);
  EXPECT_EQ(snap.jobs[snap.gated[0].first].obj()["metadata"]["name"], "gated");
  EXPECT_NE(snap.gated[0].second.find("example.com/wait"), std::string::npos);
}

TEST_F(CycleReadTest, UnreadableObjectIsSkippedAndToldOncePerVersion) {
  ApplyNode("n1", 1);
  // A Queue whose spec the decoder refuses, written past the API (as an older server might have).
  json queue = {{"apiVersion", "tessera.io/v1"},
                {"kind", "Queue"},
                {"metadata", {{"name", "broken"}}},
                {"spec", {{"resourceGroups", "not a list"}}}};
  const store::Write w{store::Write::Op::kPut, {"Queue", "", "broken"}, queue.dump(), std::nullopt};
  ASSERT_TRUE(plane_->Commit(std::span<const store::Write>(&w, 1)).ok());
  CycleReader reader(*plane_, 0);
  for (int i = 0; i < 2; ++i) {
    now_ += 1000;
    CycleSnapshot snap = Read(reader);
    ASSERT_EQ(snap.undecodable.size(), 1u);
    EXPECT_EQ(snap.undecodable[0].kind, "Queue");
    EXPECT_EQ(snap.undecodable[0].name, "broken");
    EXPECT_EQ(snap.cfg.queues.size(), 1u);  // the built-in one only
  }
  int warnings = 0;
  const json events = Get("/apis/tessera.io/v1/namespaces/tessera-system/events");
  for (const json& e : events["items"]) {
    if (e["spec"]["reason"] == "Undecodable") ++warnings;
  }
  EXPECT_EQ(warnings, 1);
}

TEST_F(CycleReadTest, RunningJobHoldsItsDevicesAndPastItsDeadlineFails) {
  ApplyNode("n1", 2);
  Apply(JobYaml("bounded", 1, 1, "", "  activeDeadlineSeconds: 5\n"));
  Cycle();  // admitted, by the loop
  ASSERT_EQ(Job("bounded")["status"]["phase"], "Admitted");
  CycleReader reader(*plane_, 0);
  {
    CycleSnapshot snap = Read(reader);
    ASSERT_EQ(snap.running.size(), 1u);
    EXPECT_TRUE(snap.pending.empty());
    EXPECT_EQ(core::FragmentationOf(snap.state).free_milli, 1000);  // one of two GPUs held
    EXPECT_EQ(snap.admitted_uids.size(), 1u);
    EXPECT_FALSE(snap.follow_up);
  }
  now_ += 5000;
  CycleSnapshot snap = Read(reader);
  EXPECT_TRUE(snap.running.empty());
  EXPECT_TRUE(snap.follow_up);
  const json status = Job("bounded")["status"];
  EXPECT_EQ(status["phase"], "Failed");
  EXPECT_EQ(status["reason"], "DeadlineExceeded");
}

}  // namespace
}  // namespace tessera::server
