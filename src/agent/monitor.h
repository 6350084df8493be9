// The monitor of one task: the leader of the task's process group, which joins the pod's
// cgroup, starts the task, waits for it and records how it ended, so that an agent restarted
// meanwhile still learns the exit code (agent/runner.h). It runs either as its own small
// executable (tessera-monitor, started with posix_spawn: no copy of the agent's address
// space per task) or, when that executable is missing, in a child forked from the agent.
// Everything here after the monitor starts is async-signal-safe: it may run between fork and
// exec. It uses nothing but the C and C++ runtimes, so that the executable, linked statically,
// stays small and starts fast.
#ifndef TESSERA_AGENT_MONITOR_H_
#define TESSERA_AGENT_MONITOR_H_

#include <cstdint>
#include <string>
#include <vector>

namespace tessera::agent {

// What a forked child needs to become a task: argv, the whole environment ("NAME=value"),
// the working directory, user and group. Become is async-signal-safe, for use between fork and
// exec.
class PreparedTask {
 public:
  PreparedTask(std::vector<std::string> argv, std::vector<std::string> env, std::string cwd,
               int64_t uid, int64_t gid);
  PreparedTask(const PreparedTask&) = delete;
  PreparedTask& operator=(const PreparedTask&) = delete;
  // Takes the group and user, enters the working directory and executes argv; on failure
  // writes why to stderr and exits 126 (user, group, directory) or 127 (the command).
  [[noreturn]] void Become() const;

 private:
  std::vector<std::string> env_strings_, args_;
  std::vector<char*> envp_, argv_;
  std::string cwd_;
  int64_t uid_ = -1, gid_ = -1;
};

// `strings` as the null-terminated array of pointers exec and posix_spawn take; valid while
// `strings` is neither changed nor destroyed.
std::vector<char*> CStrings(std::vector<std::string>& strings);

// Joins the cgroup whose cgroup.procs is `procs` (async-signal-safe); false on failure.
bool JoinCgroup(const char* procs);

struct MonitorPlan {
  const char* cgroup_procs = nullptr;  // joined first; null: none
  const char* exit_record = nullptr;   // written with "exit N" or "signal N"; null: none
  int log_fd = -1;    // made stdout and stderr (stdin: /dev/null); -1: already in place
  int ready_fd = -1;  // closed by the monitor and the task once the task takes stop signals
  const PreparedTask* task = nullptr;
};

// Becomes the monitor: a new session, the cgroup, the log; starts the task, waits for it,
// records how it ended and ends as the task did (its exit code, or its signal without a core
// file). Exits 125 when the monitor itself fails.
[[noreturn]] void RunMonitor(const MonitorPlan& plan);

// The executable's main: `tessera-monitor [--ready FD] [--cgroup PROCS] [--record PATH]
// [--uid N] [--gid N] [--cwd DIR] -- ARGV...`, stdout and stderr already the log, its
// environment the task's (readable, unlike a command line, only by the task's user; and, the
// executable being static, LD_PRELOAD and the like in it do not act on the monitor). Returns
// 125 on a malformed command line.
int MonitorMain(int argc, char** argv);

}  // namespace tessera::agent

#endif  // TESSERA_AGENT_MONITOR_H_
