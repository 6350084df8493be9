// Cases ported from Volcano's allocate action tests (volcano-sh/volcano,
// pkg/scheduler/actions/allocate/allocate_test.go: TestAllocate), run through Tessera's admission
// cycle. Each keeps Volcano's name, nodes (CPU and memory), PodGroups (a Tessera workload with
// min_member = the group's minMember; pods of one task spec form one pod set) and the expected
// bindings. Volcano's queues become Tessera queues without quota. Cases that depend on
// minTaskMember (per-task minimums, which Tessera does not act on) or on Volcano's proportion
// plugin dividing one node between queues are not ported.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "core/admission.h"
#include "test_cluster.h"

namespace tessera::core {
namespace {

using testing::MakeNode;
using testing::MakePod;
using testing::MustAdd;
using testing::MustScheduler;

struct TaskSpec {
  std::string name;  // Volcano's volcano.sh/task-spec
  int replicas;
  int64_t cpu_milli;
  std::map<std::string, std::string> node_selector;
};

struct Group {
  std::string name;
  std::string queue;
  int32_t min_member;
  std::vector<TaskSpec> tasks;
};

struct Node {
  std::string name;
  int64_t cpu_milli;
  std::map<std::string, std::string> labels;
};

// Binds per pod ("<group>/<task>-<i>" -> node) after one cycle, and what is admitted.
std::map<std::string, std::string> Allocate(const std::vector<Node>& nodes,
                                            const std::vector<Group>& groups) {
  QueueConfig cfg;
  std::map<std::string, bool> queues;
  for (const Group& g : groups) queues[g.queue] = true;
  for (const auto& [q, unused] : queues) {
    QueueSpec spec;
    spec.name = q;
    cfg.queues.push_back(spec);
    cfg.local_queues.push_back({"c1", q, q});
  }
  Result<AdmissionCycle> cycle = AdmissionCycle::Create(cfg, {});
  EXPECT_TRUE(cycle.ok()) << cycle.status().message();
  if (!cycle.ok()) return {};
  ClusterState state;
  for (const Node& n : nodes) {
    NodeSpec spec = MakeNode(n.name, 0);
    spec.allocatable = {n.cpu_milli, 64 * 1024};
    for (const auto& [k, v] : n.labels) spec.labels[k] = v;
    MustAdd(state, spec);
  }
  std::vector<Workload> pending;
  for (size_t i = 0; i < groups.size(); ++i) {
    const Group& g = groups[i];
    Workload w;
    w.name = "c1/" + g.name;
    w.namespace_name = "c1";
    w.local_queue = g.queue;
    w.created_ms = static_cast<int64_t>(i);
    w.min_member = g.min_member;
    for (const TaskSpec& t : g.tasks) {
      PodSpec pod = MakePod("", {{"cpu", std::to_string(t.cpu_milli) + "m"}, {"memory", "1G"}});
      for (const auto& [k, v] : t.node_selector) pod.node_selector[k] = v;
      w.pod_sets.push_back({t.name, pod, t.replicas});
    }
    pending.push_back(std::move(w));
  }
  std::unique_ptr<Scheduler> placer = MustScheduler("bestfit");
  CycleResult r = cycle->Run(*placer, state, pending, {}, /*now_ms=*/0);
  std::map<std::string, std::string> binds;
  for (const Admission& a : r.admissions) {
    const std::vector<PodSpec> pods = ExpandPods(a.admitted.workload);
    for (size_t i = 0; i < pods.size(); ++i) {
      if (a.admitted.placements[i])
        binds[pods[i].name] = state.node(a.admitted.placements[i]->node).name;
    }
  }
  return binds;
}

TEST(VolcanoAllocate, CasesFromVolcano) {
  using Binds = std::map<std::string, std::string>;
  const std::map<std::string, std::string> master = {{"nodeRole", "master"}};
  const std::map<std::string, std::string> worker = {{"nodeRole", "worker"}};
  {
    SCOPED_TRACE("prepredicate failed: node selector does not match");
    // minMember 1: the worker binds; the master, whose selector matches no node, does not.
    EXPECT_EQ(
        Allocate({{"n1", 2000, worker}},
                 {{"pg1", "c1", 1, {{"master", 1, 1000, master}, {"worker", 1, 1000, worker}}}}),
        (Binds{{"c1/pg1/worker-0", "n1"}}));
  }
  {
    SCOPED_TRACE(
        "prepredicate failed and tasks are not used up, continue on until min member "
        "meet");
    EXPECT_EQ(
        Allocate({{"n1", 1000, master}, {"n2", 1000, worker}},
                 {{"pg1", "c1", 2, {{"master", 2, 1000, master}, {"worker", 2, 1000, worker}}}}),
        (Binds{{"c1/pg1/master-0", "n1"}, {"c1/pg1/worker-0", "n2"}}));
  }
  {
    SCOPED_TRACE("one Job with two Pods on one node");
    EXPECT_EQ(Allocate({{"n1", 2000, {}}}, {{"pg1", "c1", 2, {{"p", 2, 1000, {}}}}}),
              (Binds{{"c1/pg1/p-0", "n1"}, {"c1/pg1/p-1", "n1"}}));
  }
  {
    SCOPED_TRACE("high priority queue should not block others");
    // pg1 (queue c1) asks for 3 CPUs of a 2-CPU node; pg2 (queue c2) still binds.
    EXPECT_EQ(Allocate({{"n1", 2000, {}}}, {{"pg1", "c1", 1, {{"p1", 1, 3000, {}}}},
                                            {"pg2", "c2", 1, {{"p2", 1, 1000, {}}}}}),
              (Binds{{"c1/pg2/p2-0", "n1"}}));
  }
  {
    // Not Volcano's case of this name (it needs minTaskMember) but its gang rule: a group of
    // minMember 2 with room for one member binds nothing.
    SCOPED_TRACE("a gang with room for fewer than minMember binds nothing");
    EXPECT_EQ(
        Allocate({{"n1", 1000, master}},
                 {{"pg1", "c1", 2, {{"master", 2, 1000, master}, {"worker", 2, 1000, worker}}}}),
        (Binds{}));
  }
}

}  // namespace
}  // namespace tessera::core
