#include "agent/exec.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>

namespace tessera::agent {
namespace {

using nlohmann::json;

// Records what the agent sends; answers `output_status` to output.
class FakeApi : public ApiClient {
 public:
  Result<Reply> Call(const std::string& method, const std::string& target, const std::string& body,
                     const std::string&) override {
    std::lock_guard<std::mutex> lock(mu);
    calls.push_back(method + " " + target);
    if (target.find("/output?stream=stdout") != std::string::npos) stdout_data += body;
    if (target.find("/output?stream=stderr") != std::string::npos) stderr_data += body;
    if (target.ends_with("/end")) end = json::parse(body);
    if (target.find("/output") != std::string::npos) return Reply{output_status, ""};
    return Reply{200, ""};
  }
  std::mutex mu;
  std::vector<std::string> calls;
  std::string stdout_data, stderr_data;
  json end;
  int output_status = 200;
};

class ExecAgentTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/tessera-exec-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    options_.node = "n1";
    options_.keepalive_ms = 100;
    options_.stop_grace_ms = 200;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  // A pod "a/j/w-0" running as a process with FOO=bar in `dir_`.
  void ProcessPod() {
    ProcessSpec pod;
    pod.key = "a/j/w-0";
    pod.argv = {"sleep", "100"};
    pod.env = {{"FOO", "bar"}};
    pod.workdir = dir_;
    targets_.Set(pod.key, pod);
  }
  json Session(std::vector<std::string> command) {
    return {{"id", "s1"}, {"namespace", "a"}, {"job", "j"}, {"pod", "w-0"}, {"command", command}};
  }

  std::string dir_;
  std::shared_ptr<FakeApi> api_ = std::make_shared<FakeApi>();
  ExecTargets targets_;
  ExecOptions options_;
};

TEST_F(ExecAgentTest, RunsInThePodsEnvironmentAndReportsOutputAndExitCode) {
  ProcessPod();
  ExecAgent agent(api_, targets_, options_);
  agent.Serve(Session({"sh", "-c", "echo $FOO in $(pwd); echo warn >&2; exit 3"}));
  EXPECT_EQ(api_->stdout_data, "bar in " + dir_ + "\n");
  EXPECT_EQ(api_->stderr_data, "warn\n");
  EXPECT_EQ(api_->end, json({{"exitCode", 3}}));
  EXPECT_EQ(api_->calls.back(), "POST /apis/tessera.io/v1/execs/s1/end");
}

TEST_F(ExecAgentTest, ACommandKilledBySignalSaysSo) {
  ProcessPod();
  ExecAgent agent(api_, targets_, options_);
  agent.Serve(Session({"sh", "-c", "kill -9 $$"}));
  EXPECT_EQ(api_->end, json({{"signal", 9}}));
  agent.Serve(Session({"/nonexistent/program"}));
  EXPECT_EQ(api_->end, json({{"exitCode", 127}}));
  EXPECT_NE(api_->stderr_data.find("cannot execute"), std::string::npos);
}

TEST_F(ExecAgentTest, AContainerPodRunsTheCommandThroughTheRuntimesExec) {
  const std::string runtime = dir_ + "/runtime.sh";
  std::ofstream(runtime) << "#!/bin/sh\necho \"runtime $*\"\n";
  std::filesystem::permissions(runtime, std::filesystem::perms::owner_all);
  ProcessSpec pod;
  pod.key = "a/j/w-0";
  pod.argv = {runtime, "run", "--rm", "--name", "tessera-a_j_w-0", "busybox"};
  pod.container = "tessera-a_j_w-0";
  pod.workdir = dir_;
  targets_.Set(pod.key, pod);
  ExecAgent agent(api_, targets_, options_);
  agent.Serve(Session({"env"}));
  EXPECT_EQ(api_->stdout_data, "runtime exec tessera-a_j_w-0 env\n");
  EXPECT_EQ(api_->end, json({{"exitCode", 0}}));
}

TEST_F(ExecAgentTest, APodNotRunningHereIsAnError) {
  ExecAgent agent(api_, targets_, options_);
  agent.Serve(Session({"true"}));
  EXPECT_EQ(api_->end, json({{"error", "pod w-0 is not running on node n1"}}));
}

TEST_F(ExecAgentTest, TheCommandStopsWhenItsClientLeavesOrItsPodStops) {
  ProcessPod();
  ExecAgent agent(api_, targets_, options_);
  api_->output_status = 410;  // the client left
  const auto started = std::chrono::steady_clock::now();
  agent.Serve(Session({"sleep", "30"}));
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(5));
  EXPECT_TRUE(api_->end.is_null()) << "nobody to tell: " << api_->end;

  api_->output_status = 200;
  std::thread stop_pod([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    targets_.Retain({});
  });
  agent.Serve(Session({"sleep", "30"}));
  stop_pod.join();
  EXPECT_EQ(api_->end, json({{"error", "stopped: its pod stopped"}}));
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(10));
}

TEST(ExecSpec, AProcessPodsCommandTakesItsUserDirectoryAndCgroup) {
  ProcessSpec pod;
  pod.key = "a/j/w-0";
  pod.argv = {"train.py"};
  pod.env = {{"RANK", "1"}};
  pod.workdir = "/w";
  pod.cwd = "/src";
  pod.uid = 1000;
  pod.gid = 100;
  pod.cgroup_procs = "/sys/fs/cgroup/x/cgroup.procs";
  pod.log_path = "/w/log";
  const ProcessSpec e = ExecSpec(pod, {"nvidia-smi", "-L"});
  EXPECT_EQ(e.argv, (std::vector<std::string>{"nvidia-smi", "-L"}));
  EXPECT_EQ(e.env.at("RANK"), "1");
  EXPECT_EQ(e.cwd, "/src");
  EXPECT_EQ(e.uid, 1000);
  EXPECT_EQ(e.gid, 100);
  EXPECT_EQ(e.cgroup_procs, pod.cgroup_procs);
  EXPECT_TRUE(e.log_path.empty()) << "not the pod's log";
}

}  // namespace
}  // namespace tessera::agent
