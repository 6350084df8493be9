// core/quarantine.h step by step: each Xid action class, the circuit breaker, and GPUs and nodes
// coming back.
#include "core/quarantine.h"

#include <gtest/gtest.h>

namespace tessera::core {
namespace {

constexpr int64_t kMin = 60'000;

NodeHealthReport Node(const std::string& name, int64_t gpus, std::vector<XidSeenAt> xids = {}) {
  NodeHealthReport n;
  n.node = name;
  n.gpu_count = gpus;
  n.xids = std::move(xids);
  n.boot_id = "boot-1";
  return n;
}

// Applies the outcome's states to `nodes`, as the server keeps them between cycles.
void Keep(const QuarantineOutcome& o, std::vector<NodeHealthReport>* nodes) {
  for (const auto& [name, st] : o.changed) {
    for (NodeHealthReport& n : *nodes) {
      if (n.node == name) n.state = st;
    }
  }
}

std::string Reasons(const QuarantineOutcome& o) {
  std::string s;
  for (const QuarantineEvent& e : o.events) s += e.reason + " ";
  return s;
}

TEST(QuarantineTest, ApplicationErrorsAndIgnoredXidsQuarantineNothing) {
  std::vector<NodeHealthReport> nodes = {
      Node("n1", 8, {{0, 13, 1000}, {1, 31, 1100}, {2, 43, 1200}, {3, 63, 1300}, {4, 92, 1400}})};
  const QuarantineOutcome o = DecideQuarantine(nodes, {}, 10 * kMin);
  EXPECT_TRUE(o.events.empty()) << Reasons(o);
  ASSERT_EQ(o.changed.size(), 1u);  // only how far the Xids were read
  EXPECT_TRUE(o.changed[0].second.gpus.empty());
  EXPECT_FALSE(o.changed[0].second.reboot);
  EXPECT_EQ(o.changed[0].second.handled_until_ms, 1400);
}

TEST(QuarantineTest, AResetXidQuarantinesTheGpuAloneOnceAndRequestsAReset) {
  std::vector<NodeHealthReport> nodes = {Node("n1", 8, {{3, 95, 1000}}), Node("n2", 8)};
  QuarantineOutcome o = DecideQuarantine(nodes, {}, 10 * kMin);
  ASSERT_EQ(o.events.size(), 1u);
  EXPECT_EQ(o.events[0].reason, "GpuQuarantined");
  EXPECT_EQ(o.events[0].node, "n1");
  EXPECT_NE(o.events[0].message.find("XID 95"), std::string::npos);
  EXPECT_NE(o.events[0].message.find("nvidia-smi --gpu-reset -i 3"), std::string::npos);
  ASSERT_EQ(o.changed.size(), 1u);
  const NodeQuarantine& st = o.changed[0].second;
  ASSERT_EQ(st.gpus.size(), 1u);
  EXPECT_EQ(st.gpus[0].gpu, 3);
  EXPECT_TRUE(st.gpus[0].reset_requested);
  EXPECT_EQ(st.gpus[0].since_ms, 10 * kMin);
  Keep(o, &nodes);
  // The same Xid read again, and another on the same GPU: nothing more.
  nodes[0].xids.push_back({3, 62, 2000});
  o = DecideQuarantine(nodes, {}, 11 * kMin);
  EXPECT_TRUE(o.events.empty()) << Reasons(o);
  Keep(o, &nodes);
  EXPECT_EQ(nodes[0].state.gpus.size(), 1u);
}

TEST(QuarantineTest, AWorkflowXidQuarantinesWithoutAResetAndUnknownOnesAsResets) {
  std::vector<NodeHealthReport> nodes = {Node("n1", 8, {{0, 48, 1000}, {1, 999, 1001}}),
                                         Node("n2", 8)};
  const QuarantineOutcome o = DecideQuarantine(nodes, {.breaker_percent = 50}, 10 * kMin);
  ASSERT_EQ(o.changed.size(), 1u);
  const NodeQuarantine& st = o.changed[0].second;
  ASSERT_EQ(st.gpus.size(), 2u);
  EXPECT_FALSE(st.gpus[0].reset_requested);  // 48: a diagnosis decides
  EXPECT_TRUE(st.gpus[1].reset_requested);   // not in the catalog: the safe side
  EXPECT_NE(o.events[0].message.find("dcgmi diag -r 2 -i 0"), std::string::npos);
}

TEST(QuarantineTest, FallenOffTheBusMarksTheNodeForRebootUntilItBootsAgain) {
  std::vector<NodeHealthReport> nodes = {Node("n1", 8, {{2, 79, 1000}, {3, 95, 1001}})};
  QuarantineOutcome o = DecideQuarantine(nodes, {}, 10 * kMin);
  ASSERT_EQ(o.changed.size(), 1u);
  ASSERT_TRUE(o.changed[0].second.reboot);
  EXPECT_EQ(o.changed[0].second.reboot->boot_id, "boot-1");
  EXPECT_TRUE(o.changed[0].second.gpus.empty());  // the node is drained: no GPU alone
  EXPECT_EQ(Reasons(o), "NodeRebootRequired ");
  Keep(o, &nodes);
  o = DecideQuarantine(nodes, {}, 11 * kMin);  // same boot: still marked
  EXPECT_TRUE(o.changed.empty());
  nodes[0].boot_id = "boot-2";
  o = DecideQuarantine(nodes, {}, 20 * kMin);
  ASSERT_EQ(o.changed.size(), 1u);
  EXPECT_FALSE(o.changed[0].second.reboot);
  EXPECT_EQ(Reasons(o), "NodeRebooted ");
}

TEST(QuarantineTest, TheCircuitBreakerStopsMassQuarantineWithinItsWindow) {
  // 40 GPUs, 10%: at most 4 quarantined within 30 minutes (a node has 2).
  std::vector<NodeHealthReport> nodes = {Node("n1", 2, {{0, 95, 1000}, {1, 95, 1001}}),
                                         Node("n2", 2, {{0, 95, 1002}, {1, 95, 1003}}),
                                         Node("n3", 2, {{1, 95, 1004}})};
  for (int i = 4; i <= 20; ++i) nodes.push_back(Node("n" + std::to_string(i), 2));
  QuarantineOutcome o = DecideQuarantine(nodes, {}, 10 * kMin);
  EXPECT_EQ(o.breaker_limit, 4);
  EXPECT_EQ(o.quarantined_in_window, 4);
  EXPECT_TRUE(o.breaker_open);
  EXPECT_EQ(Reasons(o),
            "GpuQuarantined GpuQuarantined GpuQuarantined GpuQuarantined "
            "QuarantineCircuitBreakerOpen ");
  EXPECT_NE(o.events[4].message.find("GPU 1 of node n3 is not acted on"), std::string::npos)
      << o.events[4].message;
  Keep(o, &nodes);
  EXPECT_TRUE(nodes[2].state.gpus.empty());
  // Within the window a new Xid is refused too; once the window has passed it is acted on.
  nodes[3].xids.push_back({0, 95, 2000});
  o = DecideQuarantine(nodes, {}, 20 * kMin);
  EXPECT_EQ(Reasons(o), "QuarantineCircuitBreakerOpen ");
  Keep(o, &nodes);
  nodes[3].xids.push_back({1, 95, 3000});
  o = DecideQuarantine(nodes, {}, 41 * kMin);
  EXPECT_EQ(Reasons(o), "GpuQuarantined ");
  EXPECT_EQ(o.quarantined_in_window, 1);
  EXPECT_FALSE(o.breaker_open);
  // A node to reboot counts all its GPUs: 1 + 2 of 4, then another node's 2 go beyond.
  Keep(o, &nodes);
  nodes[4].xids.push_back({0, 79, 4000});
  nodes[5].xids.push_back({0, 79, 4001});
  o = DecideQuarantine(nodes, {}, 42 * kMin);
  EXPECT_EQ(Reasons(o), "NodeRebootRequired QuarantineCircuitBreakerOpen ");
  // Disabled: nothing is acted on.
  nodes[6].xids.push_back({0, 95, 5000});
  o = DecideQuarantine(nodes, {.enabled = false}, 43 * kMin);
  EXPECT_TRUE(o.events.empty());
}

TEST(QuarantineTest, AGpuComesBackOnlyAfterAResetAndCleanChecks) {
  std::vector<NodeHealthReport> nodes = {Node("n1", 8, {{3, 95, 1000}})};
  QuarantineOutcome o = DecideQuarantine(nodes, {}, 10 * kMin);
  Keep(o, &nodes);
  const int64_t since = nodes[0].state.gpus[0].since_ms;
  // Passing its checks without a reset: still quarantined.
  nodes[0].passing = {3};
  EXPECT_TRUE(DecideQuarantine(nodes, {}, 12 * kMin).changed.empty());
  // A reset from before the quarantine, or one that failed: still quarantined.
  nodes[0].resets = {{3, since - 1, true}, {3, since + 1, false}};
  EXPECT_TRUE(DecideQuarantine(nodes, {}, 12 * kMin).changed.empty());
  // Reset afterwards, but not passing yet: still quarantined.
  nodes[0].resets.push_back({3, since + 5'000, true});
  nodes[0].passing.clear();
  EXPECT_TRUE(DecideQuarantine(nodes, {}, 12 * kMin).changed.empty());
  // Passing, but an Xid came after the reset: still quarantined.
  nodes[0].passing = {3};
  nodes[0].xids.push_back({3, 13, since + 6'000});
  o = DecideQuarantine(nodes, {}, 12 * kMin);
  Keep(o, &nodes);
  EXPECT_EQ(nodes[0].state.gpus.size(), 1u);
  // Reset again and passing: back in service.
  nodes[0].resets.push_back({3, since + 7'000, true});
  o = DecideQuarantine(nodes, {}, 13 * kMin);
  ASSERT_EQ(o.changed.size(), 1u);
  EXPECT_TRUE(o.changed[0].second.gpus.empty());
  EXPECT_EQ(Reasons(o), "GpuReturned ");
}

}  // namespace
}  // namespace tessera::core
