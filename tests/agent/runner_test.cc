#include "agent/runner.h"

#include "agent/cgroups.h"
#include "agent/fence.h"
#include "agent/process_tree.h"

#include <fcntl.h>
#include <grp.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <thread>

namespace tessera::agent {
namespace {

int64_t Now() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

class RunnerFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/tessera-runner-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  std::vector<Exit> WaitExits(Runner& r, size_t n, int64_t ms = 5000) {
    std::vector<Exit> out;
    const int64_t end = Now() + ms;
    while (out.size() < n && Now() < end) {
      for (Exit& e : r.Poll(Now())) out.push_back(std::move(e));
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return out;
  }
  // Starts `key` as a shell that ignores SIGTERM, with a child (sleep `seconds`) in its group,
  // and returns once the shell has run its trap: a SIGTERM that came first would end it.
  void StartIgnoringTerm(Runner& r, const std::string& key, int seconds, const std::string& log) {
    const std::string ready = dir_ + "/ready-" + std::to_string(seconds);
    ASSERT_TRUE(
        r.Start({key,
                 {"sh", "-c",
                  "trap '' TERM; : > " + ready + "; sleep " + std::to_string(seconds) + " & wait"},
                 {},
                 "",
                 log,
                 ""})
            .ok());
    for (int i = 0; i < 500 && !std::filesystem::exists(ready); ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    ASSERT_TRUE(std::filesystem::exists(ready));
  }
  std::string Read(const std::string& path) {
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  // Runs the shell `probe` as a task, closes `held` (a descriptor of this process's that the
  // probe looks for) once it has started, and returns what the probe printed after it ended
  // with exit code 0.
  std::string ProbeDescriptors(Runner& r, const std::string& probe, int held) {
    const Status started = r.Start({"fds", {"sh", "-c", probe}, {}, "", dir_ + "/fds.log", ""});
    close(held);
    EXPECT_TRUE(started.ok()) << started.message();
    const std::vector<Exit> exits = started.ok() ? WaitExits(r, 1) : std::vector<Exit>();
    EXPECT_EQ(exits.size(), 1u);
    if (exits.size() == 1) EXPECT_EQ(exits[0].exit_code, 0);
    return Read(dir_ + "/fds.log");
  }
  std::string dir_;
};

// Each case runs with the monitor as its own executable (posix_spawn) and as a forked child of
// this process (the fallback when the executable is missing).
class RunnerTest : public RunnerFixture, public ::testing::WithParamInterface<const char*> {
 protected:
  std::string monitor() const { return GetParam(); }
};

TEST_P(RunnerTest, RunsWithEnvWorkdirAndLogAndReportsExitCodes) {
  Runner r("", monitor());
  // Nothing of this process's environment reaches the task.
  setenv("TESSERA_RUNNER_TEST_AGENT_ONLY", "leaked", 1);
  ProcessSpec ok{
      "a",
      {"sh", "-c", "echo $FOO in $(pwd) ${TESSERA_RUNNER_TEST_AGENT_ONLY:-alone}; echo err >&2"},
      {{"FOO", "bar"}},
      dir_ + "/work",
      dir_ + "/a.log",
      ""};
  ASSERT_TRUE(r.Start(ok).ok());
  EXPECT_EQ(r.Start(ok).code(), StatusCode::kAlreadyExists);
  ASSERT_TRUE(r.Start({"b", {"sh", "-c", "exit 7"}, {}, "", dir_ + "/b.log", ""}).ok());
  auto exits = WaitExits(r, 2);
  ASSERT_EQ(exits.size(), 2u);
  for (const Exit& e : exits) EXPECT_EQ(e.exit_code, e.key == "a" ? 0 : 7) << e.key;
  unsetenv("TESSERA_RUNNER_TEST_AGENT_ONLY");
  EXPECT_EQ(Read(dir_ + "/a.log"), "bar in " + dir_ + "/work alone\nerr\n");
  EXPECT_FALSE(r.Running("a"));
  ASSERT_TRUE(r.Start({"c", {"/nonexistent/cmd"}, {}, "", dir_ + "/c.log", ""}).ok());
  exits = WaitExits(r, 1);
  ASSERT_EQ(exits.size(), 1u);
  EXPECT_EQ(exits[0].exit_code, 127);
  EXPECT_FALSE(r.Start({"d", {}, {}, "", dir_ + "/d.log", ""}).ok());
}

TEST_P(RunnerTest, MakesTheTasksDirectoriesAndEntersItsWorkingDirectory) {
  Runner r("", monitor());
  ProcessSpec spec{"w",
                   {"sh", "-c", "pwd; test -d \"$SCRATCH\" && echo made"},
                   {{"SCRATCH", dir_ + "/work/volumes/s"}},
                   dir_ + "/work",
                   dir_ + "/w.log",
                   ""};
  spec.cwd = "/";
  spec.dirs = {dir_ + "/work/volumes/s"};
  ASSERT_TRUE(r.Start(spec).ok());
  ASSERT_EQ(WaitExits(r, 1).size(), 1u);
  EXPECT_EQ(Read(dir_ + "/w.log"), "/\nmade\n");
  spec.key = "missing";
  spec.cwd = dir_ + "/no-such-dir";
  const Status s = r.Start(spec);
  EXPECT_EQ(s.code(), StatusCode::kFailedPrecondition);
  EXPECT_NE(s.message().find("workingDir"), std::string::npos) << s.message();
}

// StartAll starts several tasks at once, each with its own outcome: a key given twice and a spec
// without a command fail alone. It returns once every started task takes stop signals (a
// SIGTERM right after it reaches the task).
TEST_P(RunnerTest, StartAllStartsEachTaskWithItsOwnOutcome) {
  Runner r(dir_ + "/state", monitor());
  std::vector<ProcessSpec> specs;
  for (const char* key : {"a", "b", "a", "c"}) {
    specs.push_back({key,
                     {"sh", "-c", "trap 'echo term; exit 3' TERM; sleep 30 & wait"},
                     {},
                     "",
                     dir_ + "/" + key + ".log",
                     ""});
  }
  specs.push_back({"none", {}, {}, "", dir_ + "/none.log", ""});
  std::vector<const ProcessSpec*> each;
  for (const ProcessSpec& spec : specs) each.push_back(&spec);
  const std::vector<Status> started = r.StartAll(each);
  ASSERT_EQ(started.size(), 5u);
  EXPECT_TRUE(started[0].ok()) << started[0].message();
  EXPECT_TRUE(started[1].ok()) << started[1].message();
  EXPECT_EQ(started[2].code(), StatusCode::kAlreadyExists);
  EXPECT_TRUE(started[3].ok()) << started[3].message();
  EXPECT_EQ(started[4].code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(r.Keys(), (std::vector<std::string>{"a", "b", "c"}));
  for (const char* key : {"a", "b", "c"}) {
    EXPECT_TRUE(std::filesystem::exists(r.StateFile(key, ".pid"))) << key;
    r.Stop(key, Now(), 5000);
  }
  std::vector<Exit> exits = WaitExits(r, 3);
  ASSERT_EQ(exits.size(), 3u);
  for (const Exit& e : exits) {
    // Ended by the SIGTERM (through its trap, or before the shell had set it), not the SIGKILL
    // due 5 s later.
    EXPECT_TRUE(e.stopped) << e.key;
    EXPECT_TRUE(e.exit_code == 3 || e.signal == SIGTERM)
        << e.key << ": exit " << e.exit_code << ", signal " << e.signal;
  }
}

TEST_P(RunnerTest, StopSendsTermThenKillsTheWholeGroup) {
  Runner r("", monitor());
  // Ignores SIGTERM and has a child in its group: both must go.
  ASSERT_NO_FATAL_FAILURE(StartIgnoringTerm(r, "t", 311, dir_ + "/t.log"));
  const pid_t pid = r.Pid("t");
  r.Stop("t", Now(), 300);
  auto exits = WaitExits(r, 1);
  ASSERT_EQ(exits.size(), 1u);
  EXPECT_TRUE(exits[0].stopped);
  EXPECT_EQ(exits[0].signal, SIGKILL);
  // No process of the group is left alive (a killed child may linger as a zombie until its
  // new parent reaps it).
  auto alive_in_group = [&] {
    int n = 0;
    for (const auto& e : std::filesystem::directory_iterator("/proc")) {
      std::ifstream in(e.path() / "stat");
      std::string stat;
      if (!std::getline(in, stat)) continue;
      const size_t close = stat.rfind(')');
      if (close == std::string::npos) continue;
      std::istringstream rest(stat.substr(close + 2));
      char state = 0;
      long ppid = 0, pgrp = 0;
      rest >> state >> ppid >> pgrp;
      n += pgrp == pid && state != 'Z' ? 1 : 0;
    }
    return n;
  };
  for (int i = 0; i < 100 && alive_in_group() > 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(alive_in_group(), 0);
}

TEST_P(RunnerTest, ARestartedRunnerAdoptsWhatTheLastOneLeftAndLearnsHowItEnded) {
  const std::string run = dir_ + "/run";
  pid_t sleeper = 0, exiter = 0;
  {
    Runner first(run, monitor());
    ASSERT_TRUE(first.Start({"ns/job/p-0", {"sleep", "313"}, {}, "", dir_ + "/p.log", ""}).ok());
    ASSERT_TRUE(
        first.Start({"ns/job/p-1", {"sh", "-c", "sleep 0.3; exit 3"}, {}, "", dir_ + "/q.log", ""})
            .ok());
    sleeper = first.Pid("ns/job/p-0");
    exiter = first.Pid("ns/job/p-1");
    first.Detach();  // as when the agent is killed: nothing stopped, records kept
  }
  ASSERT_EQ(kill(sleeper, 0), 0);
  Runner again(run, monitor());
  EXPECT_EQ(again.Adopt(), (std::vector<std::string>{"ns/job/p-0", "ns/job/p-1"}));
  EXPECT_TRUE(again.Running("ns/job/p-0"));
  EXPECT_EQ(again.Pid("ns/job/p-0"), sleeper);  // the same process, not a new one
  // The adopted groups are not this runner's children; the test process, their parent, reaps
  // them so that they do not linger as zombies.
  std::thread reaper([&] {
    waitpid(exiter, nullptr, 0);
    waitpid(sleeper, nullptr, 0);
  });
  auto exits = WaitExits(again, 1);
  ASSERT_EQ(exits.size(), 1u);
  EXPECT_EQ(exits[0].key, "ns/job/p-1");
  EXPECT_EQ(exits[0].exit_code, 3);  // from the monitor's record
  EXPECT_FALSE(exits[0].stopped);
  again.Stop("ns/job/p-0", Now(), 2000);
  exits = WaitExits(again, 1);
  ASSERT_EQ(exits.size(), 1u);
  EXPECT_EQ(exits[0].key, "ns/job/p-0");
  EXPECT_TRUE(exits[0].stopped);
  EXPECT_EQ(exits[0].signal, SIGTERM);
  reaper.join();
  EXPECT_TRUE(RecordedGroups(run).empty());
  Runner third(run, monitor());
  EXPECT_TRUE(third.Adopt().empty());
}

TEST_P(RunnerTest, RecordsOfGroupsThatAreGoneAreNotAdopted) {
  const std::string run = dir_ + "/run";
  std::filesystem::create_directories(run);
  // A pid that runs, but with another start time: a reused pid, not ours.
  std::ofstream(run + "/ns_job_p-0.pid") << getpid() << " 1\nns/job/p-0\n";
  Runner r(run, monitor());
  EXPECT_TRUE(r.Adopt().empty());
  EXPECT_FALSE(std::filesystem::exists(run + "/ns_job_p-0.pid"));
}

TEST_P(RunnerTest, FenceKeeperStopsEveryRecordedGroupOnceTheLeaseExpires) {
  const std::string run = dir_ + "/run";
  Runner r(run, monitor());
  ASSERT_NO_FATAL_FAILURE(StartIgnoringTerm(r, "ns/job/p-0", 317, dir_ + "/p.log"));
  ASSERT_TRUE(r.Start({"ns/job/p-1", {"sleep", "317"}, {}, "", dir_ + "/q.log", ""}).ok());
  FenceKeeper keeper(run, 1000, 500);
  // No lease yet: nothing to fence.
  EXPECT_FALSE(keeper.Check(BootMs()).fenced);
  ASSERT_TRUE(WriteLease(run, 10'000).ok());
  EXPECT_EQ(ReadLease(run), 10'000);
  FenceKeeper::Round round = keeper.Check(10'900);
  EXPECT_FALSE(round.fenced);
  EXPECT_EQ(round.live, 2);
  round = keeper.Check(11'001);
  EXPECT_TRUE(round.fenced);
  EXPECT_EQ(round.stopped, (std::vector<std::string>{"ns/job/p-0", "ns/job/p-1"}));
  EXPECT_TRUE(round.killed.empty());
  // The one that ignores SIGTERM is killed after the stop grace.
  std::vector<Exit> exits;
  for (int i = 0; i < 100 && exits.empty(); ++i) {
    exits = r.Poll(Now());
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_EQ(exits.size(), 1u);
  EXPECT_EQ(exits[0].key, "ns/job/p-1");
  EXPECT_EQ(exits[0].signal, SIGTERM);
  round = keeper.Check(11'400);
  EXPECT_TRUE(round.killed.empty());
  round = keeper.Check(11'501);
  EXPECT_EQ(round.killed, std::vector<std::string>{"ns/job/p-0"});
  exits = WaitExits(r, 1);
  ASSERT_EQ(exits.size(), 1u);
  EXPECT_EQ(exits[0].signal, SIGKILL);
  EXPECT_EQ(keeper.Check(11'600).live, 0);
  // A renewed lease lifts the fence.
  ASSERT_TRUE(WriteLease(run, 11'600).ok());
  EXPECT_FALSE(keeper.Check(11'700).fenced);
}

// The processes running `sleep <marker>` (not the shells whose command lines name it).
std::vector<pid_t> Holding(const std::string& marker) {
  std::vector<pid_t> out;
  for (const auto& e : std::filesystem::directory_iterator("/proc")) {
    const std::string name = e.path().filename().string();
    if (name.empty() || !std::all_of(name.begin(), name.end(), ::isdigit)) continue;
    std::ifstream in(e.path() / "cmdline");
    std::string cmdline((std::istreambuf_iterator<char>(in)), {});
    std::replace(cmdline.begin(), cmdline.end(), '\0', ' ');
    if (cmdline == "sleep " + marker + " ") out.push_back(std::stoi(name));
  }
  return out;
}

// Waits up to `ms` for no process to hold `marker`; returns whether none does.
bool NoneHolds(const std::string& marker, int ms = 3000) {
  for (int waited = 0; waited < ms; waited += 20) {
    if (Holding(marker).empty()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return Holding(marker).empty();
}

// A task that starts `sleep <marker>` in a session of its own (setsid), ignoring SIGTERM, then
// writes `ready` and runs on for `then` (a shell command): the process that ran twice after a
// fence, because signals to the task's process group did not reach it.
ProcessSpec Escaping(const std::string& key, const std::string& marker, const std::string& ready,
                     const std::string& then, const std::string& log) {
  return {key,
          {"sh", "-c",
           "setsid sh -c \"trap '' TERM; exec sleep " + marker + "\" & sleep 0.2; : > " + ready +
               "; " + then},
          {},
          "",
          log,
          ""};
}

std::string Marker(int n) { return std::to_string(4000 + n) + "." + std::to_string(getpid()); }

void WaitFor(const std::string& path) {
  for (int i = 0; i < 500 && !std::filesystem::exists(path); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_TRUE(std::filesystem::exists(path)) << path;
}

TEST_P(RunnerTest, AStopReachesAProcessThatLeftTheGroup) {
  const std::string marker = Marker(1), ready = dir_ + "/ready";
  Runner r("", monitor());
  ASSERT_TRUE(r.Start(Escaping("esc", marker, ready, "sleep 300", dir_ + "/esc.log")).ok());
  ASSERT_NO_FATAL_FAILURE(WaitFor(ready));
  const std::vector<pid_t> escaped = Holding(marker);
  ASSERT_EQ(escaped.size(), 1u);
  EXPECT_NE(getpgid(escaped[0]), r.Pid("esc"));  // it left the task's group
  r.Stop("esc", Now(), 200);
  ASSERT_EQ(WaitExits(r, 1).size(), 1u);
  EXPECT_TRUE(NoneHolds(marker)) << "the escaped process outlived the stop";
}

TEST_P(RunnerTest, WhatATaskLeavesRunningEndsWithIt) {
  // The task ends at once; what it started in a session of its own is handed to the monitor (a
  // child subreaper), which ends it before the task's end is reported.
  const std::string marker = Marker(2), ready = dir_ + "/ready";
  Runner r("", monitor());
  ASSERT_TRUE(r.Start(Escaping("esc", marker, ready, "exit 3", dir_ + "/esc.log")).ok());
  const std::vector<Exit> exits = WaitExits(r, 1, 10'000);
  ASSERT_EQ(exits.size(), 1u);
  EXPECT_EQ(exits[0].exit_code, 3);
  EXPECT_TRUE(Holding(marker).empty()) << "the task's orphan outlived it";
}

TEST_P(RunnerTest, AFenceReachesAProcessThatLeftTheGroup) {
  const std::string run = dir_ + "/run", marker = Marker(3), ready = dir_ + "/ready";
  Runner r(run, monitor());
  ASSERT_TRUE(r.Start(Escaping("ns/job/p-0", marker, ready, "sleep 300", dir_ + "/p.log")).ok());
  ASSERT_NO_FATAL_FAILURE(WaitFor(ready));
  ASSERT_EQ(Holding(marker).size(), 1u);
  FenceKeeper keeper(run, 1000, 500);
  ASSERT_TRUE(WriteLease(run, 10'000).ok());
  EXPECT_TRUE(keeper.Check(11'001).fenced);
  EXPECT_EQ(keeper.Check(11'501).killed, std::vector<std::string>{"ns/job/p-0"});
  EXPECT_TRUE(NoneHolds(marker)) << "the escaped process outlived the fence";
  ASSERT_EQ(WaitExits(r, 1).size(), 1u);
  EXPECT_EQ(keeper.Check(11'600).live, 0);
}

// With a real cgroup v2 group (where the machine has a writable hierarchy), a process that
// outlives the pod's monitor (killed outright, so that its tree is handed to init) is still the
// pod's: the pod's end is reported only once cgroup.kill has emptied the group.
TEST_P(RunnerTest, APodEndsOnlyWhenItsCgroupIsEmpty) {
  auto root = FindCgroupRoot("auto");
  if (!root.ok()) GTEST_SKIP() << "no writable cgroup v2 hierarchy: " << root.status().message();
  const std::string agent = "runner-test-" + std::to_string(getpid());
  auto cg = PrepareCgroup(
      *root, "ns/job/cg-" + std::string(GetParam()).substr(0, 0) + std::to_string(Now()), 0, 0,
      agent);
  ASSERT_TRUE(cg.ok()) << cg.status().message();
  const std::string marker = Marker(4), ready = dir_ + "/ready";
  Runner r("", monitor());
  ProcessSpec spec = Escaping("cg", marker, ready, "sleep 300", dir_ + "/cg.log");
  spec.cgroup_procs = cg->procs_path;
  ASSERT_TRUE(r.Start(spec).ok());
  ASSERT_NO_FATAL_FAILURE(WaitFor(ready));
  ASSERT_EQ(Holding(marker).size(), 1u);
  EXPECT_TRUE(CgroupPopulated(cg->dir));
  // The monitor and its group die at once: the escaped process is handed to init, out of reach
  // of the group and of the monitor's tree, but still in the pod's cgroup.
  kill(-r.Pid("cg"), SIGKILL);
  ASSERT_EQ(WaitExits(r, 1).size(), 1u);
  EXPECT_TRUE(NoneHolds(marker, 100)) << "the pod ended while its cgroup held a process";
  EXPECT_FALSE(CgroupPopulated(cg->dir));
  RemoveCgroup(cg->dir);
  RemoveCgroup(*root + "/tessera/" + agent);
}

TEST_P(RunnerTest, RunsTheTaskAsItsUserAndGroupWhenTheAgentIsRoot) {
  std::filesystem::permissions(dir_, std::filesystem::perms(0755));  // the task's user enters
  Runner r("", monitor());
  ProcessSpec spec{
      "u", {"sh", "-c", "echo $(id -u):$(id -g):$(id -G)"}, {}, dir_ + "/work", dir_ + "/u.log",
      ""};
  spec.uid = 65534;
  spec.gid = 65533;
  const Status started = r.Start(spec);
  if (geteuid() != 0) {
    // Not root: refused before anything runs, naming the fields.
    EXPECT_EQ(started.code(), StatusCode::kFailedPrecondition);
    EXPECT_NE(started.message().find("runAsUser"), std::string::npos);
    return;
  }
  ASSERT_TRUE(started.ok()) << started.message();
  auto exits = WaitExits(r, 1);
  ASSERT_EQ(exits.size(), 1u);
  EXPECT_EQ(exits[0].exit_code, 0);
  // The user and the group, and no supplementary group of the agent's.
  EXPECT_EQ(Read(dir_ + "/u.log"), "65534:65533:65533\n");
  struct stat st {};
  ASSERT_EQ(stat((dir_ + "/work").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 65534u);  // its working directory is its own
  // A user without a group: the agent's gid, none of its supplementary groups.
  ProcessSpec user_only{
      "v", {"sh", "-c", "echo $(id -u):$(id -G)"}, {}, dir_ + "/work2", dir_ + "/v.log", ""};
  user_only.uid = 65534;
  // The agent (this process) holds a supplementary group the task must not get.
  std::vector<gid_t> saved(static_cast<size_t>(getgroups(0, nullptr)));
  saved.resize(static_cast<size_t>(getgroups(static_cast<int>(saved.size()), saved.data())));
  const gid_t extra[] = {getegid(), 4};
  ASSERT_EQ(setgroups(2, extra), 0);
  const Status user_started = r.Start(user_only);
  ASSERT_EQ(setgroups(saved.size(), saved.data()), 0);
  ASSERT_TRUE(user_started.ok()) << user_started.message();
  ASSERT_EQ(WaitExits(r, 1).size(), 1u);
  EXPECT_EQ(Read(dir_ + "/v.log"), "65534:" + std::to_string(getegid()) + "\n");
}

TEST_P(RunnerTest, PodsJoinTheirCgroupWithLimits) {
  // A directory standing in for a cgroup v2 mount.
  const std::string root = dir_ + "/cgroup";
  std::filesystem::create_directories(root);
  EXPECT_FALSE(PrepareCgroup(root, "ns/job/p-0", 4000, 16384).ok());  // not v2 yet
  std::ofstream(root + "/cgroup.controllers") << "cpu memory\n";
  auto cg = PrepareCgroup(root, "ns/job/p-0", 4000, 16384);
  ASSERT_TRUE(cg.ok()) << cg.status().message();
  EXPECT_EQ(Read(cg->dir + "/cpu.max"), "400000 100000\n");
  EXPECT_EQ(Read(cg->dir + "/memory.max"), std::to_string(16384LL << 20) + "\n");
  EXPECT_EQ(PrepareCgroup(root, "ns/job/p-1", 0, 0)->description, "cpu.max=max, memory.max=max");
  Runner r("", monitor());
  ASSERT_TRUE(r.Start({"p", {"true"}, {}, "", dir_ + "/p.log", cg->procs_path}).ok());
  const pid_t pid = r.Pid("p");
  ASSERT_EQ(WaitExits(r, 1).size(), 1u);
  EXPECT_EQ(Read(cg->procs_path), std::to_string(pid) + "\n");
}

TEST_P(RunnerTest, TheMonitorHoldsNoDescriptorOfTheAgents) {
  // Close-on-exec, as the agent's own are: a monitor forked without exec would keep it (in
  // `tessera dev`, the server's listening socket and data directory lock) for the task's life.
  const int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
  const int held = fcntl(null, F_DUPFD_CLOEXEC, 40);  // clear of the monitor's own (0-3)
  close(null);
  ASSERT_GE(held, 40);
  Runner r("", monitor());
  const std::string fd = std::to_string(held);
  const std::string probe = "test -e /proc/$PPID/fd/" + fd + " && echo monitor holds " + fd +
                            "; test -e /proc/$$/fd/" + fd + " && echo task holds " + fd +
                            "; echo checked";
  EXPECT_EQ(ProbeDescriptors(r, probe, held), "checked\n");
}

INSTANTIATE_TEST_SUITE_P(Launch, RunnerTest, ::testing::Values(TESSERA_MONITOR, ""),
                         [](const ::testing::TestParamInfo<const char*>& info) {
                           return std::string(info.param).empty() ? "Forked" : "Spawned";
                         });

class MonitorExecutableTest : public RunnerFixture {};

TEST_F(MonitorExecutableTest, TheTaskGetsNoDescriptorOfTheAgentsButItsLog) {
  // A descriptor this process holds open across exec: the spawned monitor closes it.
  const int held = open("/dev/null", O_RDONLY);
  ASSERT_GE(held, 3);
  Runner r("", TESSERA_MONITOR);
  const std::string probe = "for fd in 3 " + std::to_string(held) +
                            "; do test -e /proc/$$/fd/$fd && echo open $fd; done; echo checked";
  EXPECT_EQ(ProbeDescriptors(r, probe, held), "checked\n");
}

TEST_F(MonitorExecutableTest, RefusesAMalformedCommandLine) {
  const std::string monitor = TESSERA_MONITOR;
  EXPECT_EQ(WEXITSTATUS(std::system((monitor + " --bogus x -- true 2>/dev/null").c_str())), 125);
  EXPECT_EQ(WEXITSTATUS(std::system((monitor + " --uid abc -- true 2>/dev/null").c_str())), 125);
  EXPECT_EQ(WEXITSTATUS(std::system((monitor + " -- 2>/dev/null").c_str())), 125);
  // Well formed: the task's exit code is the monitor's.
  EXPECT_EQ(WEXITSTATUS(std::system(("A=4 " + monitor + " -- sh -c 'exit $A'").c_str())), 4);
}

}  // namespace
}  // namespace tessera::agent
