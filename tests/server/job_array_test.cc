// Job arrays through the scheduling loop: a batch/v1 Job with completions and parallelism is
// one object that runs parallelism tasks at a time, each placed and charged as it starts.
#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "loop_fixture.h"

namespace tessera::server {
namespace {

using nlohmann::json;

// What an agent does when its pods end: each placed, unfinished task of `job` gets a final
// state, Failed for the names in `fail`. Returns the indexes that ended, by pod name.
std::map<std::string, int> EndTasks(json job, const std::set<std::string>& fail,
                                    const std::function<void(const json&)>& put) {
  std::map<std::string, int> ended;
  for (json& p : job["status"]["pods"]) {
    if (!p.is_object()) continue;
    const std::string name = p["name"];
    p["state"] = {{"phase", fail.contains(name) ? "Failed" : "Succeeded"},
                  {"exitCode", fail.contains(name) ? 1 : 0}};
    ended[name] = p["index"];
  }
  put(job);
  return ended;
}

// The issue's case: an indexed Job with parallelism 8 running 100 indexes, one of them failing
// once and retried under its own index (backoffLimitPerIndex).
TEST_F(LoopTest, AnIndexedJobWithParallelism8Runs100Indexes) {
  ApplyNode("n1", 8);
  ApplyNode("n2", 8);
  Apply(R"(
apiVersion: batch/v1
kind: Job
metadata: {name: arr}
spec:
  completions: 100
  parallelism: 8
  completionMode: Indexed
  backoffLimitPerIndex: 1
  template:
    spec:
      restartPolicy: Never
      containers: [{name: c, command: ["true"], resources: {limits: {nvidia.com/gpu: 1}}}]
)");
  std::map<int, int> succeeded;  // index -> times
  std::set<std::string> names;
  int cycles = 0, failures_seen = 0;
  json job;
  for (; cycles < 40; ++cycles) {
    Cycle();
    job = Job("arr");
    if (job["status"]["phase"] != "Admitted") break;
    // Never more than parallelism at once, each on its own GPU with its own index.
    std::set<std::string> gpus;
    std::set<int> running;
    for (const json& p : job["status"]["pods"]) {
      if (!p.is_object()) continue;
      ASSERT_TRUE(p.contains("index")) << p.dump();
      EXPECT_TRUE(running.insert(p["index"].get<int>()).second) << job.dump();
      for (const json& d : p["devices"]) {
        EXPECT_TRUE(
            gpus.insert(p["node"].get<std::string>() + d["uuid"].get<std::string>()).second);
      }
    }
    ASSERT_LE(job["status"]["pods"].size(), 8u) << job.dump();
    // Admitted with its first task, the array grows to its parallelism in the next cycle.
    if (cycles > 0) {
      EXPECT_EQ(running.size(), std::min<size_t>(8, 100 - succeeded.size())) << job.dump();
    }
    if (cycles == 1) {
      // kubectl sees the running tasks as pods labelled with their index, as Kubernetes'.
      const json pods = Get("/api/v1/namespaces/default/pods?labelSelector=job-name%3Darr");
      ASSERT_EQ(pods["items"].size(), 8u) << pods.dump();
      for (const json& pod : pods["items"]) {
        const std::string index =
            pod["metadata"]["labels"]["batch.kubernetes.io/job-completion-index"];
        EXPECT_EQ(pod["metadata"]["name"], "arr-main-" + index);
      }
    }
    const std::set<std::string> fail = {"main-13"};  // the first try of index 13
    for (const auto& [name, index] : EndTasks(job, fail, [&](const json& j) { Put(j); })) {
      EXPECT_TRUE(names.insert(name).second) << name << " ran twice";
      if (fail.contains(name)) {
        ++failures_seen;
      } else {
        ++succeeded[index];
      }
    }
  }
  ASSERT_EQ(job["status"]["phase"], "Succeeded") << job.dump();
  EXPECT_LE(cycles, 16);  // 100 indexes 8 at a time after the first, and one retry
  EXPECT_EQ(failures_seen, 1);
  EXPECT_TRUE(names.contains("main-13-1"));  // index 13's second try
  ASSERT_EQ(succeeded.size(), 100u);
  for (const auto& [index, times] : succeeded) EXPECT_EQ(times, 1) << index;
  EXPECT_EQ(job["status"]["succeeded"], 100);
  EXPECT_EQ(job["status"]["failed"], 1);
  EXPECT_EQ(job["status"]["completedIndexes"], "0-99");
  EXPECT_EQ(job["status"]["failedIndexes"], "");
  EXPECT_EQ(Events("arr").back(), "Completed: 100 of 100 completions succeeded");

  // kubectl's view: Kubernetes' own status fields.
  const json batch = Get("/apis/batch/v1/namespaces/default/jobs/arr");
  EXPECT_EQ(batch["spec"]["completions"], 100);
  EXPECT_EQ(batch["spec"]["parallelism"], 8);
  EXPECT_EQ(batch["status"]["succeeded"], 100);
  EXPECT_EQ(batch["status"]["failed"], 1);
  EXPECT_EQ(batch["status"]["completedIndexes"], "0-99");
  // Kubernetes 1.31+: SuccessCriteriaMet, then Complete, both CompletionsReached.
  EXPECT_EQ(batch["status"]["conditions"][0]["type"], "SuccessCriteriaMet") << batch.dump();
  EXPECT_EQ(batch["status"]["conditions"][1]["type"], "Complete") << batch.dump();
  EXPECT_EQ(batch["status"]["conditions"][1]["reason"], "CompletionsReached");
}

// Each task is charged as it starts: a queue of 3 GPUs runs 3 of an array's 8 at a time, and
// the others say why they wait. A failure past backoffLimit fails the Job and frees its GPUs.
TEST_F(LoopTest, AnArraysTasksAreChargedAsTheyStart) {
  ApplyNode("n1", 8);
  ApplyKueueQueue(3);
  Apply(R"(
apiVersion: batch/v1
kind: Job
metadata: {name: arr, labels: {kueue.x-k8s.io/queue-name: main}}
spec:
  completions: 20
  parallelism: 8
  backoffLimit: 1
  template:
    spec:
      restartPolicy: Never
      containers: [{name: c, command: ["true"], resources: {limits: {nvidia.com/gpu: 1}}}]
)");
  Cycle();
  Cycle();
  json job = Job("arr");
  ASSERT_EQ(job["status"]["phase"], "Admitted") << job.dump();
  int placed = 0;
  for (const json& p : job["status"]["pods"]) placed += p.is_object() ? 1 : 0;
  EXPECT_EQ(placed, 3) << job.dump();
  // The 5 slots waiting for one reason: one entry stands for them.
  ASSERT_EQ(job["status"]["waitingPods"].size(), 1u) << job.dump();
  EXPECT_EQ(job["status"]["waitingPods"][0]["name"], "main-pending-0") << job.dump();
  EXPECT_EQ(job["status"]["waitingPods"][0]["count"], 5) << job.dump();
  EXPECT_NE(job["status"]["waitingPods"][0]["reason"].get<std::string>().find("nominal 3 GPUs"),
            std::string::npos)
      << job.dump();
  // Its size is fixed while it runs, as Kubernetes' completions are.
  json bigger = job;
  bigger["spec"]["completions"] = 40;
  bigger["metadata"].erase("resourceVersion");
  EXPECT_NE(Put(bigger, 400).body.find("spec.completions: field is immutable"), std::string::npos);
  // NonIndexed: no completedIndexes for kubectl, and no JOB_COMPLETION_INDEX for the pods.
  EXPECT_FALSE(
      Get("/apis/batch/v1/namespaces/default/jobs/arr")["status"].contains("completedIndexes"));

  // Two failures against a backoffLimit of 1: the Job fails, and holds nothing.
  EndTasks(job, {"main-0", "main-1"}, [&](const json& j) { Put(j); });
  Cycle();
  job = Job("arr");
  EXPECT_EQ(job["status"]["phase"], "Failed") << job.dump();
  EXPECT_EQ(job["status"]["reason"], "BackoffLimitExceeded");
  EXPECT_EQ(job["status"]["succeeded"], 1);
  EXPECT_EQ(job["status"]["failed"], 2);
  const json batch = Get("/apis/batch/v1/namespaces/default/jobs/arr");
  EXPECT_EQ(batch["status"]["conditions"][0]["type"], "FailureTarget") << batch.dump();
  EXPECT_EQ(batch["status"]["conditions"][1]["type"], "Failed") << batch.dump();
  EXPECT_EQ(batch["status"]["conditions"][1]["reason"], "BackoffLimitExceeded") << batch.dump();
}

// An array suspended in the cycle that sees one of its tasks end keeps that task's success:
// resumed, it runs the other indexes only.
TEST_F(LoopTest, AnArraySuspendedAsATaskEndsKeepsThatTasksSuccess) {
  ApplyNode("n1", 8);
  Apply(R"(
apiVersion: batch/v1
kind: Job
metadata: {name: arr}
spec:
  completions: 4
  parallelism: 2
  completionMode: Indexed
  template:
    spec:
      restartPolicy: Never
      containers: [{name: c, command: ["true"], resources: {limits: {nvidia.com/gpu: 1}}}]
)");
  Cycle();
  Cycle();
  json job = Job("arr");
  ASSERT_EQ(job["status"]["pods"].size(), 2u) << job.dump();
  ASSERT_EQ(job["status"]["pods"][0]["index"], 0) << job.dump();
  job["status"]["pods"][0]["state"] = {{"phase", "Succeeded"}, {"exitCode", 0}};
  job["spec"]["suspend"] = true;
  job["metadata"].erase("resourceVersion");
  Put(job);
  Cycle();
  job = Job("arr");
  EXPECT_EQ(job["status"]["phase"], "Pending") << job.dump();
  EXPECT_EQ(job["status"]["succeeded"], 1) << job.dump();
  EXPECT_EQ(job["status"]["completedIndexes"], "0") << job.dump();
  job["spec"]["suspend"] = false;
  job["metadata"].erase("resourceVersion");
  Put(job);
  Cycle();
  Cycle();
  job = Job("arr");
  ASSERT_EQ(job["status"]["phase"], "Admitted") << job.dump();
  std::set<int> running;
  for (const json& p : job["status"]["pods"]) {
    if (p.is_object()) running.insert(p["index"].get<int>());
  }
  EXPECT_EQ(running, (std::set<int>{1, 2})) << job.dump();
}

TEST_F(LoopTest, ArrayFieldsAreCheckedWithTheirPaths) {
  auto refused = [&](const std::string& spec, const std::string& field) {
    const HttpResponse r = Apply(R"(
apiVersion: batch/v1
kind: Job
metadata: {name: bad}
spec:
)" + spec + R"(
  template:
    spec:
      containers: [{name: c, command: ["true"]}]
)",
                                 400);
    EXPECT_NE(r.body.find(field), std::string::npos) << spec << ": " << r.body;
  };
  refused("  completionMode: Indexed", "spec.completions");
  refused("  parallelism: 0", "spec.parallelism");
  refused("  completions: 3\n  backoffLimitPerIndex: 1", "spec.backoffLimitPerIndex");
  refused("  completions: 3\n  completionMode: Indexed\n  maxFailedIndexes: 1",
          "spec.maxFailedIndexes");
  refused("  completions: 100001\n  completionMode: Indexed", "spec.completions");
}

}  // namespace
}  // namespace tessera::server
