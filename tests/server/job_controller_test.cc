// batch/v1 Jobs held to Kubernetes' Job controller: cases ported from
// pkg/controller/job/job_controller_test.go, each named by its case there, read through the
// batch/v1 view as kubectl and the client libraries read it. The agents' part (a pod running,
// ending) is written as an agent writes it.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "loop_fixture.h"

namespace tessera::server {
namespace {

using nlohmann::json;

class JobControllerTest : public LoopTest {
 protected:
  void SetUp() override {
    LoopTest::SetUp();
    ApplyNode("n1", 4);
  }
  // A batch/v1 Job of one-GPU pods.
  void ApplyJob(const std::string& name, const std::string& spec_lines) {
    Apply("apiVersion: batch/v1\nkind: Job\nmetadata: {name: " + name + "}\nspec:\n" + spec_lines +
          R"(
  template:
    spec:
      restartPolicy: Never
      containers: [{name: main, command: ["true"], resources: {limits: {nvidia.com/gpu: 1}}}]
)");
  }
  // Sets the state of pod `i` of Job `name` as its agent reports it.
  void Report(const std::string& name, size_t i, const json& state) {
    json job = Job(name);
    ASSERT_GT(job["status"]["pods"].size(), i) << job.dump();
    job["status"]["pods"][i]["state"] = state;
    Put(job);
  }
  json BatchJob(const std::string& name) {
    return Get("/apis/batch/v1/namespaces/default/jobs/" + name);
  }
  // The batch/v1 status's counts and its last condition, "active/succeeded/failed type reason".
  std::string Outcome(const std::string& name) {
    const json st = BatchJob(name)["status"];
    const json& conditions = st.value("conditions", json::array());
    std::string last = conditions.empty() ? std::string("-")
                                          : conditions.back()["type"].get<std::string>() + " " +
                                                conditions.back().value("reason", std::string());
    return std::to_string(st.value("active", 0)) + "/" + std::to_string(st.value("succeeded", 0)) +
           "/" + std::to_string(st.value("failed", 0)) + " " + last;
  }
};

// TestSyncJobPastDeadline, "activeDeadlineSeconds less than single pod execution": one active
// pod, 15 s after the start with a deadline of 10 s: the pod is stopped and counted failed, the
// Job fails with reason DeadlineExceeded and Kubernetes' message.
TEST_F(JobControllerTest, ActiveDeadlineSecondsLessThanSinglePodExecution) {
  ApplyJob("deadline", "  activeDeadlineSeconds: 10\n  backoffLimit: 6\n");
  Cycle();
  Report("deadline", 0, {{"phase", "Running"}});
  now_ += 15'000;
  Cycle();
  EXPECT_EQ(Outcome("deadline"), "0/0/1 Failed DeadlineExceeded");
  const json conditions = BatchJob("deadline")["status"]["conditions"];
  EXPECT_EQ(conditions.back()["message"], "Job was active longer than specified deadline");
  EXPECT_TRUE(Job("deadline")["status"]["pods"].empty() ||
              Job("deadline")["status"]["phase"] == "Failed");
}

// TestSyncJobPastDeadline, "activeDeadlineSeconds bigger than single pod execution": two
// completions one at a time, one succeeded and one active at the deadline: 1 succeeded, 1
// failed, DeadlineExceeded.
TEST_F(JobControllerTest, ActiveDeadlineSecondsBiggerThanSinglePodExecution) {
  ApplyJob("deadline2", "  parallelism: 1\n  completions: 2\n  activeDeadlineSeconds: 10\n");
  Cycle();
  Report("deadline2", 0, {{"phase", "Succeeded"}, {"exitCode", 0}});
  Cycle();  // the next index starts
  Cycle();
  Report("deadline2", 0, {{"phase", "Running"}});
  now_ += 15'000;
  Cycle();
  EXPECT_EQ(Outcome("deadline2"), "0/1/1 Failed DeadlineExceeded");
}

// TestSyncJobPastDeadline, "activeDeadlineSeconds times-out before any pod starts": placed, its
// pod never reported running: the deadline still counts from the start.
TEST_F(JobControllerTest, ActiveDeadlineSecondsTimesOutBeforeAnyPodStarts) {
  ApplyJob("slow", "  activeDeadlineSeconds: 10\n");
  Cycle();
  now_ += 10'000;
  Cycle();
  EXPECT_EQ(BatchJob("slow")["status"]["conditions"].back()["reason"], "DeadlineExceeded");
}

// TestSyncJobPastDeadline, "activeDeadlineSeconds with backofflimit reach": the pod failed with
// backoffLimit 0 before the deadline: the reason is the backoff limit's.
TEST_F(JobControllerTest, ActiveDeadlineSecondsWithBackoffLimitReach) {
  ApplyJob("both", "  activeDeadlineSeconds: 1\n  backoffLimit: 0\n");
  Cycle();
  json job = Job("both");
  job["status"]["pods"][0]["state"] = {{"phase", "Failed"}, {"exitCode", 1}};
  job["status"]["phase"] = "Failed";
  job["status"]["finishedAt"] = FormatTime(now_);
  job["status"]["message"] = "pod main-0 failed: exit code 1";
  Put(job);  // as the agent reports a pod that failed for good
  now_ += 10'000;
  Cycle();
  EXPECT_EQ(Outcome("both"), "0/0/1 Failed BackoffLimitExceeded");
}

// TestSyncJobWithJobSuspended ("suspending a job with satisfied expectations", "resuming a
// suspended job"): a running Job suspended has no active pods and the Suspended condition;
// resumed, it runs again.
TEST_F(JobControllerTest, SuspendingAndResumingAJob) {
  ApplyJob("pause", "  parallelism: 2\n  completions: 2\n");
  Cycle();
  Report("pause", 0, {{"phase", "Running"}});
  Report("pause", 1, {{"phase", "Running"}});
  EXPECT_EQ(Outcome("pause"), "2/0/0 -");
  json b = BatchJob("pause");
  b["spec"]["suspend"] = true;
  HttpRequest r;
  r.method = "PUT";
  r.path = "/apis/batch/v1/namespaces/default/jobs/pause";
  r.authorization = "Bearer " + admin_;
  r.content_type = "application/json";
  r.body = b.dump();
  ASSERT_EQ(api_->Handle(r).status, 200);
  Cycle();
  EXPECT_EQ(Outcome("pause"), "0/0/0 Suspended JobSuspended");
  EXPECT_TRUE(Get("/api/v1/namespaces/default/pods")["items"].empty());
  b = BatchJob("pause");
  b["spec"]["suspend"] = false;
  r.body = b.dump();
  ASSERT_EQ(api_->Handle(r).status, 200);
  Cycle();
  EXPECT_EQ(Get("/api/v1/namespaces/default/pods")["items"].size(), 2u);
}

}  // namespace
}  // namespace tessera::server
