// Runs tasks as process groups: command and args, environment, working directory, stdout and
// stderr to a log file; reports exits; stops with SIGTERM, then SIGKILL after a grace period.
// Not thread-safe: one owner drives it (the agent loop).
#ifndef TESSERA_AGENT_RUNNER_H_
#define TESSERA_AGENT_RUNNER_H_

#include <sys/types.h>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/status.h"

namespace tessera::agent {

struct ProcessSpec {
  std::string key;                // unique per run, e.g. "team-a/train/worker-0"
  std::vector<std::string> argv;  // argv[0] is looked up in PATH
  // The whole environment, with PATH (the system's) and HOME (the working directory) unless
  // given: nothing is inherited from the agent.
  std::map<std::string, std::string> env;
  std::string workdir;       // created when missing
  std::string log_path;      // stdout and stderr, appended
  std::string cgroup_procs;  // a cgroup.procs file the process joins first; empty: none
};

struct Exit {
  std::string key;
  int exit_code = 0;     // when exited normally
  int signal = 0;        // when killed by a signal
  bool stopped = false;  // we stopped it (Stop)
};

class Runner {
 public:
  // `state_dir` keeps a pid file per running process, so that a restarted agent can stop what
  // an earlier one left running (see KillLeftovers); empty: none kept.
  explicit Runner(std::string state_dir = "") : state_dir_(std::move(state_dir)) {}
  ~Runner();  // kills what still runs

  // Kills the process groups an earlier agent on this state dir left behind (it was killed
  // itself, or the machine's agent restarted); returns their keys. The scheduler may have moved
  // their work elsewhere meanwhile: whatever is still bound here starts again, so nothing runs
  // twice.
  std::vector<std::string> KillLeftovers();

  Status Start(const ProcessSpec& spec);
  bool Running(const std::string& key) const { return procs_.contains(key); }
  pid_t Pid(const std::string& key) const;
  std::vector<std::string> Keys() const;

  // Sends SIGTERM to the process group now and SIGKILL at `now_ms + grace_ms` (by Poll).
  void Stop(const std::string& key, int64_t now_ms, int64_t grace_ms);

  // Reaps exited processes and escalates overdue stops.
  std::vector<Exit> Poll(int64_t now_ms);

 private:
  struct Proc {
    pid_t pid = 0;
    int64_t kill_at_ms = -1;  // -1: not stopping
  };
  std::string PidFile(const std::string& key) const;

  std::string state_dir_;
  std::map<std::string, Proc> procs_;
};

}  // namespace tessera::agent

#endif  // TESSERA_AGENT_RUNNER_H_
