#include "api/job_array.h"

#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

namespace tessera::api {
namespace {

using nlohmann::json;

// Kubernetes' text form of index sets, as its job controller writes status.completedIndexes
// (pkg/controller/job/indexed_job_utils_test.go, TestCalculateSucceededIndexes: "1,3-5,7" and
// merging of adjacent indexes).
TEST(IndexSet, ReadsAndWritesKubernetesIndexLists) {
  auto s = IndexSet::Parse("1,3-5,7", 10);
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->Text(), "1,3-5,7");
  EXPECT_EQ(s->Count(), 5);
  EXPECT_TRUE(s->Contains(4));
  EXPECT_FALSE(s->Contains(6));
  s->Insert(6);  // joins 3-5 and 7
  EXPECT_EQ(s->Text(), "1,3-7");
  s->Insert(2);
  EXPECT_EQ(s->Text(), "1-7");
  s->Insert(9);
  s->Insert(0);
  EXPECT_EQ(s->Text(), "0-7,9");
  EXPECT_EQ(s->NextAbsent(0), 8);
  EXPECT_EQ(s->NextAbsent(8), 8);
  EXPECT_EQ(s->NextAbsent(9), 10);
  EXPECT_EQ(IndexSet::Parse("", 3)->Count(), 0);
  for (const char* bad : {"1,,2", "3-1", "0-10", "a", "-1", "1-", "1,"}) {
    EXPECT_FALSE(IndexSet::Parse(bad, 10).ok()) << bad;
  }
  EXPECT_EQ(IndexSet::Parse("5,1-2,3", 10)->Text(), "1-3,5");  // merged, in order
}

json Slot(int index, const std::string& phase) {
  json p = {{"name", "main-" + std::to_string(index)}, {"node", "n"}, {"index", index}};
  if (!phase.empty()) p["state"] = {{"phase", phase}};
  return p;
}

TEST(AdvanceArray, CountsEndedTasksAndKeepsParallelismSlotsWhileIndexesRemain) {
  ArraySpec spec;
  spec.completions = 5;
  spec.parallelism = 2;
  json status = {{"pods", {Slot(0, "Succeeded"), Slot(1, "Running")}}};
  ArrayStep step = AdvanceArray(spec, &status);
  EXPECT_TRUE(step.changed);
  EXPECT_EQ(step.outcome, "");
  EXPECT_EQ(status["succeeded"], 1);
  EXPECT_EQ(status["completedIndexes"], "0");
  ASSERT_EQ(status["pods"].size(), 2u) << status.dump();
  EXPECT_EQ(status["pods"][0]["index"], 1);
  EXPECT_TRUE(status["pods"][1].is_null());  // a slot for the next index
  EXPECT_EQ(IndexesToStart(spec, status), 3);

  // A placed slot takes the lowest index neither done nor running.
  status["pods"][1] = {{"name", "main-1"}, {"node", "n"}};
  AssignIndexes(spec, "main", &status);
  EXPECT_EQ(status["pods"][1]["index"], 2);
  EXPECT_EQ(status["pods"][1]["name"], "main-2");

  // Nothing ended: nothing changes.
  const json before = status;
  EXPECT_FALSE(AdvanceArray(spec, &status).changed);
  EXPECT_EQ(status, before);

  // The last indexes: slots shrink to what is left, then the Job succeeds.
  status["pods"] = {Slot(1, "Succeeded"), Slot(2, "Succeeded")};
  status["completedIndexes"] = "0,3";
  status["succeeded"] = 2;
  step = AdvanceArray(spec, &status);
  EXPECT_EQ(step.outcome, "");
  EXPECT_EQ(status["completedIndexes"], "0-3");
  ASSERT_EQ(status["pods"].size(), 1u) << status.dump();
  status["pods"][0] = {{"name", "x"}, {"node", "n"}};
  AssignIndexes(spec, "main", &status);
  EXPECT_EQ(status["pods"][0]["index"], 4);
  status["pods"][0]["state"] = {{"phase", "Succeeded"}};
  step = AdvanceArray(spec, &status);
  EXPECT_EQ(step.outcome, "Succeeded");
  EXPECT_EQ(status["succeeded"], 5);
  EXPECT_EQ(status["completedIndexes"], "0-4");
  EXPECT_TRUE(status["pods"].empty());
}

// Kubernetes' backoffLimitPerIndex (KEP-3850): an index that fails more often than the limit
// is failed for good and the others go on; maxFailedIndexes ends the Job; when every index is
// done and some failed, the Job fails with FailedIndexes.
TEST(AdvanceArray, RetriesAnIndexByItselfUpToBackoffLimitPerIndex) {
  ArraySpec spec;
  spec.completions = 3;
  spec.parallelism = 3;
  spec.backoff_limit_per_index = 1;
  json status = {{"pods", {Slot(0, "Failed"), Slot(1, "Succeeded"), Slot(2, "Running")}}};
  ArrayStep step = AdvanceArray(spec, &status);
  EXPECT_EQ(step.outcome, "");
  EXPECT_EQ(status["indexFailures"], json({{"0", 1}}));
  EXPECT_EQ(status["failedIndexes"], "");
  // Index 0 is tried again, as a pod of its own name.
  ASSERT_EQ(status["pods"].size(), 2u) << status.dump();
  status["pods"][1] = {{"name", "x"}, {"node", "n"}};
  AssignIndexes(spec, "main", &status);
  EXPECT_EQ(status["pods"][1]["index"], 0);
  EXPECT_EQ(status["pods"][1]["name"], "main-0-1");
  status["pods"][1]["state"] = {{"phase", "Failed"}};
  step = AdvanceArray(spec, &status);
  EXPECT_EQ(step.outcome, "");  // index 2 still runs
  EXPECT_EQ(status["failedIndexes"], "0");
  EXPECT_FALSE(status.contains("indexFailures"));
  EXPECT_EQ(status["pods"].size(), 1u);  // nothing left to start
  status["pods"][0]["state"] = {{"phase", "Succeeded"}};
  step = AdvanceArray(spec, &status);
  EXPECT_EQ(step.outcome, "Failed");
  EXPECT_EQ(step.reason, "FailedIndexes");
  EXPECT_EQ(status["completedIndexes"], "1-2");
  EXPECT_EQ(status["failed"], 2);

  spec.max_failed_indexes = 0;
  status = {{"pods", {Slot(0, "Failed"), Slot(1, "Running")}}, {"indexFailures", {{"0", 1}}}};
  step = AdvanceArray(spec, &status);
  EXPECT_EQ(step.outcome, "Failed");
  EXPECT_EQ(step.reason, "MaxFailedIndexesExceeded");
}

// Without backoffLimitPerIndex, failures count against the Job's backoffLimit: the Job fails on
// the failure past it (Kubernetes' BackoffLimitExceeded).
TEST(AdvanceArray, FailsTheJobPastItsBackoffLimit) {
  ArraySpec spec;
  spec.completions = 10;
  spec.parallelism = 2;
  spec.backoff_limit = 1;
  json status = {{"pods", {Slot(3, "Failed"), Slot(4, "Running")}}};
  EXPECT_EQ(AdvanceArray(spec, &status).outcome, "");
  EXPECT_EQ(status["failed"], 1);
  EXPECT_FALSE(status.contains("failedIndexes"));  // only with backoffLimitPerIndex
  status["pods"][0]["state"] = {{"phase", "Failed"}};
  const ArrayStep step = AdvanceArray(spec, &status);
  EXPECT_EQ(step.outcome, "Failed");
  EXPECT_EQ(step.reason, "BackoffLimitExceeded");
}

TEST(ArrayProgress, MalformedProgressIsAnErrorAndIsKeptAcrossRewrites) {
  ArraySpec spec;
  spec.completions = 4;
  EXPECT_FALSE(ReadProgress({{"completedIndexes", "0-9"}}, spec).ok());
  EXPECT_FALSE(ReadProgress({{"succeeded", -1}}, spec).ok());
  EXPECT_FALSE(ReadProgress({{"indexFailures", {{"x", 1}}}}, spec).ok());
  const json from = {{"succeeded", 2}, {"completedIndexes", "0-1"}, {"phase", "Admitted"}};
  json to = {{"phase", "Pending"}};
  KeepProgress(from, &to);
  EXPECT_EQ(to, json({{"phase", "Pending"}, {"succeeded", 2}, {"completedIndexes", "0-1"}}));
  auto p = ReadProgress(to, spec);
  ASSERT_TRUE(p.ok());
  EXPECT_EQ(p->completed.Text(), "0-1");
}

}  // namespace
}  // namespace tessera::api

namespace tessera::api {
namespace {

using nlohmann::json;

// podFailurePolicy in an array (Kubernetes' pkg/controller/job tests "FailIndex rule matched
// for exit codes", "ignore rule matched for exit codes" and "FailJob rule matched", through the
// array's count): FailIndex fails the index at once, Ignore does not count the failure and the
// index runs again, FailJob fails the Job with reason PodFailurePolicy.
TEST(AdvanceArray, PodFailurePolicyDecidesWhatAFailedIndexMeans) {
  ArraySpec spec;
  spec.completions = 4;
  spec.parallelism = 2;
  spec.backoff_limit_per_index = 3;
  spec.pod_prefix = "default/train-";
  spec.pod_failure_policy = {
      {"container", "main"},
      {"rules",
       {{{"action", "FailIndex"}, {"onExitCodes", {{"operator", "In"}, {"values", {42}}}}},
        {{"action", "Ignore"}, {"onExitCodes", {{"operator", "In"}, {"values", {3}}}}},
        {{"action", "FailJob"}, {"onExitCodes", {{"operator", "In"}, {"values", {9}}}}}}}};
  json failed42 = Slot(0, "Failed");
  failed42["state"]["exitCode"] = 42;
  json failed3 = Slot(1, "Failed");
  failed3["state"]["exitCode"] = 3;
  json status = {{"pods", {failed42, failed3}}};
  ArrayStep step = AdvanceArray(spec, &status);
  EXPECT_EQ(step.outcome, "");
  EXPECT_EQ(status["failedIndexes"], "0");     // FailIndex: at once, not after 3 retries
  EXPECT_EQ(status["failed"], 1);              // the ignored failure is not counted
  EXPECT_EQ(IndexesToStart(spec, status), 3);  // index 1 runs again, with 2 and 3

  json failed9 = Slot(2, "Failed");
  failed9["name"] = "main-2";
  failed9["state"]["exitCode"] = 9;
  status["pods"] = {failed9};
  step = AdvanceArray(spec, &status);
  EXPECT_EQ(step.outcome, "Failed");
  EXPECT_EQ(step.reason, "PodFailurePolicy");
  EXPECT_EQ(step.message,
            "Container main for pod default/train-main-2 failed with exit code 9 matching FailJob "
            "rule at index 2");
}

}  // namespace
}  // namespace tessera::api
