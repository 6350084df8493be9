#include "agent/bindings.h"

#include <gtest/gtest.h>
#include <poll.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <set>
#include <thread>

#include "agent/waker.h"
#include "agent/worker.h"

namespace tessera::agent {
namespace {

using nlohmann::json;

json Job(const std::string& name, const std::string& node, const json& command = {"true"}) {
  return {{"apiVersion", "tessera.io/v1"},
          {"kind", "Job"},
          {"metadata", {{"namespace", "a"}, {"name", name}}},
          {"spec", {{"tasks", {{{"name", "main"}, {"replicas", 1}, {"command", command}}}}}},
          {"status", {{"phase", "Admitted"}, {"pods", {{{"name", "main-0"}, {"node", node}}}}}}};
}

std::string Line(const std::string& type, const json& object) {
  return json{{"type", type}, {"object", object}}.dump();
}

const std::string kEnd =
    Line("BOOKMARK",
         {{"apiVersion", "tessera.io/v1"},
          {"kind", "Job"},
          {"metadata",
           {{"resourceVersion", "9"}, {"annotations", {{"k8s.io/initial-events-end", "true"}}}}}});

TEST(BoundJobs, KnowsTheStateOnceAWatchHasSentItAllThenFollowsItsEvents) {
  BoundJobs jobs;
  EXPECT_FALSE(jobs.Items());
  jobs.Restart();
  EXPECT_FALSE(jobs.Apply(Line("ADDED", Job("x", "n1"))));
  EXPECT_FALSE(jobs.Items()) << "not all of the state is sent yet";
  EXPECT_TRUE(jobs.Apply(kEnd));
  ASSERT_TRUE(jobs.Items());
  EXPECT_EQ(*jobs.Items(), json::array({Job("x", "n1")}));

  json x = Job("x", "n1");
  x["status"]["pods"][0]["state"] = {{"phase", "Running"}};
  EXPECT_TRUE(jobs.Apply(Line("MODIFIED", x)));
  EXPECT_TRUE(jobs.Apply(Line("ADDED", Job("y", "n1"))));
  EXPECT_EQ(*jobs.Items(), json::array({x, Job("y", "n1")}));
  EXPECT_TRUE(jobs.Apply(Line("DELETED", x)));
  EXPECT_FALSE(jobs.Apply(Line("DELETED", x))) << "already gone";
  EXPECT_FALSE(jobs.Apply("not json"));
  EXPECT_FALSE(jobs.Apply(Line("BOOKMARK", {{"metadata", {{"resourceVersion", "12"}}}})));
  EXPECT_EQ(*jobs.Items(), json::array({Job("y", "n1")}));

  // The next watch's state replaces this one once it is all sent; until then this one stands.
  jobs.Restart();
  EXPECT_FALSE(jobs.Apply(Line("ADDED", Job("z", "n1"))));
  EXPECT_EQ(*jobs.Items(), json::array({Job("y", "n1")}));
  EXPECT_TRUE(jobs.Apply(kEnd));
  EXPECT_EQ(*jobs.Items(), json::array({Job("z", "n1")}));
  // The same state again changes nothing.
  jobs.Restart();
  EXPECT_FALSE(jobs.Apply(Line("ADDED", Job("z", "n1"))));
  EXPECT_FALSE(jobs.Apply(kEnd));

  jobs.Lost();
  EXPECT_FALSE(jobs.Items());
}

// Serves each watch from a script: the lines of the first call, then of the next...; a call
// past the script fails. Plain calls are recorded and answered 200 with `job` (GET) or `{}`.
class FakeApi : public ApiClient {
 public:
  Result<Reply> Call(const std::string& method, const std::string& target, const std::string& body,
                     const std::string&) override {
    std::lock_guard<std::mutex> lock(mu);
    calls.push_back(method + " " + target);
    if (method == "POST") posts.emplace_back(target, body);
    if (method == "PUT") {
      if (conflicts > 0) {
        --conflicts;
        return Reply{409, "{}"};
      }
      puts.push_back(json::parse(body));
      job = puts.back();
      cv.notify_all();
      return Reply{200, job.dump()};
    }
    return Reply{200, method == "GET" ? job.dump() : "{}"};
  }
  Result<int> Stream(const std::string& target,
                     const std::function<void(std::string_view)>& on_data) override {
    std::vector<std::string> lines;
    {
      std::unique_lock<std::mutex> lock(mu);
      streams.push_back(target);
      if (script.empty()) return FailedPrecondition("unreachable");
      lines = std::move(script.front());
      script.erase(script.begin());
    }
    for (const std::string& l : lines) {
      // In two pieces, as a network delivers them.
      const std::string data = l + "\n";
      on_data(std::string_view(data).substr(0, data.size() / 2));
      on_data(std::string_view(data).substr(data.size() / 2));
    }
    std::unique_lock<std::mutex> lock(mu);
    cv.wait(lock, [&] { return release; });
    return 200;
  }
  std::mutex mu;
  std::condition_variable cv;
  std::vector<std::vector<std::string>> script;
  bool release = false;  // watches end once their lines are sent
  std::vector<std::string> calls, streams;
  std::vector<json> puts;
  std::vector<std::pair<std::string, std::string>> posts;  // target, body
  json job;
  int conflicts = 0;  // PUTs answered 409 before the next is accepted
};

TEST(BindingWatch, FollowsTheWatchAndSaysWhenWhatIsBoundChanged) {
  auto api = std::make_shared<FakeApi>();
  api->script = {{Line("ADDED", Job("x", "n1")), kEnd, Line("ADDED", Job("y", "n1"))}};
  std::atomic<int> changes = 0;
  Waker waker;
  BindingWatch watch(api, [&] {
    ++changes;
    waker.Notify();
  });
  EXPECT_FALSE(watch.Items());
  watch.Start();
  for (int i = 0; i < 50 && changes < 2; ++i) waker.Wait(100);
  ASSERT_EQ(changes, 2);
  ASSERT_TRUE(watch.Items());
  EXPECT_EQ(*watch.Items(), json::array({Job("x", "n1"), Job("y", "n1")}));
  {
    std::lock_guard<std::mutex> lock(api->mu);
    ASSERT_EQ(api->streams.size(), 1u);
    EXPECT_EQ(api->streams[0],
              "/apis/tessera.io/v1/jobs?watch=true&allowWatchBookmarks=true&sendInitialEvents=true"
              "&resourceVersionMatch=NotOlderThan&timeoutSeconds=300");
  }
  // The watch ends and the next one cannot be made: not known (callers list) until one can.
  {
    std::lock_guard<std::mutex> lock(api->mu);
    api->release = true;
    api->cv.notify_all();
  }
  for (int i = 0; i < 50 && watch.Items(); ++i) waker.Wait(100);
  EXPECT_FALSE(watch.Items());
  watch.Stop();
}

// A worker's surroundings: node n1 without GPUs, a work directory removed at the end, the API
// faked.
class WorkerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/tessera-bindings-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    options_.node = "n1";
    options_.root = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(options_.root); }

  FakeApi api_;
  NodeGpus gpus_;
  WorkerOptions options_;
};

// A pod is started as soon as its binding shows, and its end is known as soon as it comes: the
// runner's exit descriptor wakes the loop, and the next round reports it, without a listing.
TEST_F(WorkerTest, AWorkerStartsWhatTheWatchShowsAndReportsItsEndWithoutListing) {
  {
    Worker worker(api_, gpus_, options_);
    json bound = json::array();
    worker.FollowBindings([&] { return std::optional<json>(bound); });
    ASSERT_TRUE(worker.Tick(1'000).ok());
    EXPECT_TRUE(worker.runner().Keys().empty());

    bound.push_back(Job("x", "n1", {"sh", "-c", "exit 3"}));
    api_.job = bound[0];
    ASSERT_TRUE(worker.Tick(2'000).ok());
    ASSERT_EQ(worker.runner().Keys(), std::vector<std::string>{"a/x/main-0"});
    const std::vector<int> fds = worker.runner().ExitFds();
    ASSERT_EQ(fds.size(), 1u) << "this kernel gives no pidfds";
    pollfd p{fds[0], POLLIN, 0};
    ASSERT_EQ(poll(&p, 1, 10'000), 1) << "the exit did not wake a waiter";
    ASSERT_TRUE(worker.Tick(3'000).ok());
    EXPECT_TRUE(worker.runner().Keys().empty());
    std::lock_guard<std::mutex> lock(api_.mu);
    ASSERT_FALSE(api_.puts.empty());
    const json& status = api_.puts.back()["status"];
    EXPECT_EQ(status["phase"], "Failed");
    EXPECT_EQ(status["pods"][0]["state"]["exitCode"], 3);
    // Reports are based on the Job as the watch showed it, or as the last report wrote it:
    // nothing is read.
    for (const std::string& c : api_.calls) {
      EXPECT_FALSE(c.starts_with("GET ")) << c << ": read although the watch knew";
    }
  }
}

// Each admission of a Job is a run of its own: a pod that finished here and is bound here
// again, on the same devices, by a new admission (its Job's binding lost on another node and
// made again) runs again; the admission it finished under does not start it twice.
TEST_F(WorkerTest, APodBoundHereAgainByANewAdmissionRunsAgain) {
  Worker worker(api_, gpus_, options_);
  json job = Job("x", "n1", {"true"});
  job["status"]["admittedAt"] = "2026-11-29T10:00:00Z";
  json bound = json::array({job});
  worker.FollowBindings([&] { return std::optional<json>(bound); });
  api_.job = job;
  ASSERT_TRUE(worker.Tick(1'000).ok());
  ASSERT_EQ(worker.runner().Keys(), std::vector<std::string>{"a/x/main-0"});
  const std::vector<int> fds = worker.runner().ExitFds();
  ASSERT_EQ(fds.size(), 1u);
  pollfd p{fds[0], POLLIN, 0};
  ASSERT_EQ(poll(&p, 1, 10'000), 1);
  ASSERT_TRUE(worker.Tick(2'000).ok());
  ASSERT_TRUE(worker.runner().Keys().empty());
  ASSERT_TRUE(worker.Tick(3'000).ok());
  EXPECT_TRUE(worker.runner().Keys().empty()) << "finished under this admission: not again";

  job["status"]["admittedAt"] = "2026-11-29T10:05:00Z";
  bound = json::array({job});
  api_.job = job;
  ASSERT_TRUE(worker.Tick(4'000).ok());  // the old run ended: the new one starts next round
  ASSERT_TRUE(worker.Tick(5'000).ok());
  EXPECT_EQ(worker.runner().Keys(), std::vector<std::string>{"a/x/main-0"});
}

// A report based on a version that is no longer current is refused, and made again on the Job
// as it is now.
TEST_F(WorkerTest, AReportOnAStaleVersionReadsTheJobAndTriesAgain) {
  {
    Worker worker(api_, gpus_, options_);
    const json bound = json::array({Job("x", "n1", {"sleep", "30"})});
    worker.FollowBindings([&] { return std::optional<json>(bound); });
    api_.job = bound[0];
    api_.job["metadata"]["labels"] = {{"changed", "meanwhile"}};
    api_.conflicts = 1;
    ASSERT_TRUE(worker.Tick(1'000).ok());
    std::lock_guard<std::mutex> lock(api_.mu);
    EXPECT_EQ(api_.calls,
              (std::vector<std::string>{"PUT /apis/tessera.io/v1/namespaces/a/jobs/x",
                                        "GET /apis/tessera.io/v1/namespaces/a/jobs/x",
                                        "PUT /apis/tessera.io/v1/namespaces/a/jobs/x"}));
    ASSERT_EQ(api_.puts.size(), 1u);
    EXPECT_EQ(api_.puts[0]["metadata"]["labels"]["changed"], "meanwhile") << "kept what changed";
    EXPECT_EQ(api_.puts[0]["status"]["pods"][0]["state"]["phase"], "Running");
  }
}

// Pods of one Job whose states change in one round are reported in one write; an array's pods
// are found by name, and its outcome is left to the server, which counts each task as it ends.
TEST_F(WorkerTest, PodsOfOneJobAreReportedInOneWriteAndAnArraysOutcomeIsTheServers) {
  {
    Worker worker(api_, gpus_, options_);
    json job = Job("arr", "n1", {"sleep", "0.3"});
    job["spec"]["completions"] = 10;
    job["spec"]["tasks"][0]["replicas"] = 3;
    job["status"]["pods"] = {{{"name", "main-4"}, {"node", "n1"}, {"index", 4}},
                             {{"name", "main-5"}, {"node", "n1"}, {"index", 5}},
                             {{"name", "main-6"}, {"node", "n1"}, {"index", 6}}};
    const json bound = json::array({job});
    worker.FollowBindings([&] { return std::optional<json>(bound); });
    api_.job = job;
    ASSERT_TRUE(worker.Tick(1'000).ok());
    {
      std::lock_guard<std::mutex> lock(api_.mu);
      ASSERT_EQ(api_.puts.size(), 1u) << "three pods started, one write";
      for (const json& p : api_.puts[0]["status"]["pods"]) {
        EXPECT_EQ(p["state"]["phase"], "Running") << p.dump();
      }
    }
    for (int fd : worker.runner().ExitFds()) {
      pollfd p{fd, POLLIN, 0};
      ASSERT_EQ(poll(&p, 1, 10'000), 1);
    }
    ASSERT_TRUE(worker.Tick(2'000).ok());
    std::lock_guard<std::mutex> lock(api_.mu);
    ASSERT_EQ(api_.puts.size(), 2u);
    const json& status = api_.puts.back()["status"];
    for (const json& p : status["pods"]) EXPECT_EQ(p["state"]["phase"], "Succeeded") << p.dump();
    EXPECT_EQ(status["phase"], "Admitted") << "an array is not over when its slots are";
  }
}

// Without a source that knows, the worker lists what is bound here, as before.
TEST_F(WorkerTest, AWorkerListsWhenTheWatchDoesNotKnow) {
  api_.job = {{"items", json::array()}};
  {
    Worker worker(api_, gpus_, options_);
    worker.FollowBindings([] { return std::optional<json>(); });
    ASSERT_TRUE(worker.Tick(1'000).ok());
    std::lock_guard<std::mutex> lock(api_.mu);
    EXPECT_EQ(api_.calls, std::vector<std::string>{"GET /apis/tessera.io/v1/jobs"});
  }
}

// Each run of a pod's container is told to the log store with its first output, by a token of
// its own, the output of the run before it shipped first: kubectl logs shows one run, --previous
// the one before. A run that writes at once is marked where it began.
TEST_F(WorkerTest, EachRunOfAContainerIsToldWithItsFirstOutput) {
  {
    Worker worker(api_, gpus_, options_);
    json job = Job("x", "n1", {"sh", "-c", "echo run; exit 1"});
    job["metadata"]["uid"] = "u-1";
    job["spec"]["tasks"][0]["restartPolicy"] = "OnFailure";
    job["spec"]["tasks"][0]["maxRetries"] = 1;
    const json bound = json::array({job});
    worker.FollowBindings([&] { return std::optional<json>(bound); });
    api_.job = bound[0];
    for (int64_t t = 1'000; t < 30'000 && api_.job["status"].value("phase", "") != "Failed";
         t += 100) {
      ASSERT_TRUE(worker.Tick(t).ok());
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    std::lock_guard<std::mutex> lock(api_.mu);
    ASSERT_EQ(api_.job["status"]["phase"], "Failed") << api_.job.dump();
    ASSERT_EQ(api_.posts.size(), 2u);
    std::set<std::string> tokens;
    for (const auto& [target, body] : api_.posts) {
      EXPECT_EQ(body, "run\n");
      const size_t at = target.find("&start=");
      ASSERT_NE(at, std::string::npos) << target;
      EXPECT_TRUE(
          target.starts_with("/apis/tessera.io/v1/namespaces/a/jobs/x/logs?pod=main-0"
                             "&uid=u-1&start=n1."))
          << target;
      tokens.insert(target.substr(at));
    }
    EXPECT_EQ(tokens.size(), 2u) << "each run has a token of its own";
  }
}

// restartPolicy Always, a container that ends at once: started again at once the first time,
// then after Kubernetes' CrashLoopBackOff delays (10 s, 20 s, ...), its state saying so; not
// many runs a second for ever.
TEST_F(WorkerTest, AContainerThatKeepsEndingBacksOffAsKubernetesDoes) {
  {
    Worker worker(api_, gpus_, options_);
    json job = Job("x", "n1", {"sh", "-c", "echo run; exit 2"});
    job["spec"]["tasks"][0]["restartPolicy"] = "Always";
    const json bound = json::array({job});
    worker.FollowBindings([&] { return std::optional<json>(bound); });
    api_.job = bound[0];
    // Each run's output is shipped with a token of its own: one post per run.
    auto runs = [&] {
      std::lock_guard<std::mutex> lock(api_.mu);
      return static_cast<int>(api_.posts.size());
    };
    // Two seconds of the agent's clock, a tick every 100 ms: the run and its one immediate
    // restart; then a wait of 10 s.
    int64_t t = 1'000;
    for (; t < 3'000; t += 100) {
      ASSERT_TRUE(worker.Tick(t).ok());
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    EXPECT_EQ(runs(), 2);
    json state;
    {
      std::lock_guard<std::mutex> lock(api_.mu);
      state = api_.job["status"]["pods"][0]["state"];
    }
    EXPECT_EQ(state["reason"], "CrashLoopBackOff") << state.dump();
    EXPECT_EQ(state["restarts"], 2) << state.dump();
    EXPECT_NE(state["message"].get<std::string>().find("back-off 10s"), std::string::npos)
        << state.dump();
    // Ten seconds after the second end: the third run, then 20 s.
    for (; t < 14'000; t += 500) {
      ASSERT_TRUE(worker.Tick(t).ok());
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    EXPECT_EQ(runs(), 3);
    for (; t < 30'000; t += 1'000) ASSERT_TRUE(worker.Tick(t).ok());
    EXPECT_EQ(runs(), 3) << "started again before 20 s";
    {
      std::lock_guard<std::mutex> lock(api_.mu);
      state = api_.job["status"]["pods"][0]["state"];
    }
    EXPECT_NE(state["message"].get<std::string>().find("back-off 20s"), std::string::npos)
        << state.dump();
  }
}

}  // namespace
}  // namespace tessera::agent
